import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeFileAtomic } from '../core/atomic-write.js';
import { AppError } from '../core/errors.js';

/**
 * The certificate `service gateway --https` serves: the user's own (`--cert FILE --key FILE`), or a
 * self-signed one that listhen makes on first use and that is then kept in `.service/tls/`
 * (mode 0600) and reused, so a client that trusted it once keeps trusting it. A kept certificate
 * that expires within a day is made again.
 */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** The files do not exist yet: listhen makes a certificate for these names, listen.ts keeps it. */
  selfSigned?: { domains: string[]; validityDays: number };
}

export const SELF_SIGNED_DAYS = 365;

export function resolveTlsFiles(opts: { stateDir: string; cert?: string | undefined; key?: string | undefined; now?: number }): TlsFiles {
  if (opts.cert || opts.key) {
    if (!opts.cert || !opts.key)
      throw new AppError('tls_files', '--cert and --key go together: give both files (PEM), or neither for a self-signed certificate');
    for (const file of [opts.cert, opts.key]) {
      try {
        fs.accessSync(file, fs.constants.R_OK);
      } catch {
        throw new AppError('tls_files', `cannot read ${file}: --cert and --key name PEM files this user can read`);
      }
    }
    checkPair(opts.cert, opts.key);
    return { certFile: path.resolve(opts.cert), keyFile: path.resolve(opts.key) };
  }
  const dir = path.join(opts.stateDir, 'tls');
  const files = { certFile: path.join(dir, 'cert.pem'), keyFile: path.join(dir, 'key.pem') };
  if (isUsable(files, opts.now ?? Date.now())) return files;
  return { ...files, selfSigned: { domains: certificateNames(), validityDays: SELF_SIGNED_DAYS } };
}

/** Keep the certificate listhen made (both files 0600: the key is a secret, the pair belongs together). */
export function keepSelfSigned(files: TlsFiles, made: { cert: string; key: string }): void {
  writeFileAtomic(files.keyFile, made.key, { mode: 0o600 });
  writeFileAtomic(files.certFile, made.cert, { mode: 0o600 });
}

// --- internal ---

/**
 * The user's files read as TLS will read them, so a wrong file is one line naming it before the
 * gateway listens (OpenSSL's own words, `ERR_OSSL_PEM_NO_START_LINE`, name neither file nor fix).
 */
function checkPair(certFile: string, keyFile: string): void {
  let cert: X509Certificate;
  let key: KeyObject;
  try {
    cert = new X509Certificate(fs.readFileSync(certFile));
  } catch {
    throw new AppError('tls_files', `${certFile} is not a certificate in PEM form (-----BEGIN CERTIFICATE-----); check --cert`);
  }
  try {
    key = createPrivateKey(fs.readFileSync(keyFile));
  } catch {
    throw new AppError('tls_files', `${keyFile} is not an unencrypted private key in PEM form (-----BEGIN PRIVATE KEY-----); check --key`);
  }
  if (!cert.checkPrivateKey(key))
    throw new AppError('tls_files', `the key in ${keyFile} does not belong to the certificate in ${certFile}; check --cert and --key`);
}

function isUsable(files: TlsFiles, now: number): boolean {
  try {
    const cert = new X509Certificate(fs.readFileSync(files.certFile));
    fs.accessSync(files.keyFile, fs.constants.R_OK);
    return Date.parse(cert.validTo) - now > 24 * 3600 * 1000;
  } catch {
    return false;
  }
}

/** The names a browser on this machine or the local network would use. */
function certificateNames(): string[] {
  const names = new Set(['localhost', '127.0.0.1', '::1', os.hostname()]);
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (!a.internal && !a.address.startsWith('fe80:')) names.add(a.address);
  }
  return [...names];
}
