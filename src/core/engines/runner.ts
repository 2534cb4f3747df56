import { execa } from 'execa';

/** `<binary> --version`, first line, or an error message; bounded so a broken CLI cannot hang `doctor`. */
export async function probeVersion(binary: string, timeoutMs = 15_000): Promise<{ ok: boolean; text: string }> {
  try {
    const r = await execa(binary, ['--version'], { timeout: timeoutMs, reject: false, stdin: 'ignore', all: true });
    const first = (r.all ?? '').split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
    if (r.timedOut) return { ok: false, text: `no answer to --version within ${timeoutMs / 1000}s` };
    if (r.exitCode !== 0) return { ok: false, text: `--version exited with ${r.exitCode}: ${first}` };
    return { ok: true, text: first };
  } catch (err) {
    return { ok: false, text: (err as Error).message };
  }
}
