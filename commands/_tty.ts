/**
 * Whether a file descriptor is a terminal, without `process.stdout` or `node:tty`: either loads Node's stream and
 * util modules, 15-22 ms of a client command's cold start on a 40 ms floor (hyperfine, compiled programs). Bun's
 * `process.binding('tty_wrap').isTTY` is the check node:tty itself makes, at no cost; node:tty answers where it is
 * missing.
 */
const answers = new Map<number, boolean>();

type TtyWrap = { isTTY?: (fd: number) => boolean };

export function isTerminal(fd: 0 | 1 | 2): boolean {
  let answer = answers.get(fd);
  if (answer === undefined) answers.set(fd, (answer = ask(fd)));
  return answer;
}

function ask(fd: number): boolean {
  try {
    const wrap = (process as unknown as { binding(name: string): TtyWrap }).binding('tty_wrap');
    if (typeof wrap.isTTY === 'function') return wrap.isTTY(fd) === true;
  } catch {}
  return (require('node:tty') as typeof import('node:tty')).isatty(fd);
}
