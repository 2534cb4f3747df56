import type { Command } from 'commander';
import type { Registration } from './program.js';

/** `service store backup|restore FILE`: the state copied out while a gateway runs, put back while none does. */
export function addStoreBackupCommands(c: Registration, store: Command): void {
  for (const [name, description] of [
    ['backup', 'copy the SQLite store to FILE, consistent while a gateway runs (PostgreSQL: it says how to use pg_dump)'],
    ['restore', 'put a backup FILE in place of the store of a directory no gateway runs on'],
  ] as const) {
    store
      .command(name)
      .description(description)
      .argument('<file>', name === 'backup' ? 'the backup file to write' : 'a file written by `store backup`')
      .option('-d, --dir <path>', 'assistant directory')
      .option('-f, --force', name === 'backup' ? 'replace FILE if it exists' : 'replace the state there (it is kept as state.db.before-restore-<time>)')
      .option('--json', 'print JSON')
      .action(
        c.act(async (file: string, opts: { force?: boolean; json?: boolean }, cmd: Command) => {
          const { runStoreBackup, runStoreRestore } = await import('./store-backup.js');
          return (name === 'backup' ? runStoreBackup : runStoreRestore)({ ...opts, file, dir: c.dirOf(cmd) }, c.io);
        }),
      );
  }
}

/** `service daemon install|uninstall|status|logs`: the gateway as a service of this machine. */
export function addOperateCommands(c: Registration): void {
  const daemon = c.command('daemon', 'run the gateway as a service of this machine (systemd user unit, or launchd on macOS)');
  for (const [name, description] of [
    ['install', 'write the unit and its environment file (0600, for the token and secrets), enable and start it'],
    ['uninstall', 'stop and disable the service, remove the unit and its environment file'],
    ['status', "the service manager's status of the service (systemctl status)"],
    ['logs', "the service's log (journalctl -u)"],
  ] as const) {
    const sub = daemon
      .command(name)
      .description(description)
      .option('-d, --dir <path>', 'assistant directory')
      .option('--system', "a system unit, run from boot as the directory's owner (Linux, as root)")
      .option('--name <unit>', "the unit's name (default: service-<assistant name>)");
    if (name === 'install') {
      sub
        .option('--print', 'write the unit to stdout and change nothing')
        .option('--no-start', 'enable it without starting it now')
        .option('--env <name...>', 'more variables of this shell for the environment file (engine credentials)');
    }
    if (name === 'logs') sub.option('-f, --follow', 'keep printing new lines').option('-n, --lines <n>', 'how many lines', '100');
    sub.action(
      c.act(async (opts: Omit<import('./daemon.js').DaemonOptions, 'action' | 'dir'>, cmd: Command) => {
        const { runDaemon } = await import('./daemon.js');
        return runDaemon({ ...opts, action: name, dir: c.dirOf(cmd) }, c.io);
      }),
    );
  }
}
