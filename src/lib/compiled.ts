/**
 * Whether this is the compiled binary (`bun build --compile`, scripts/build.ts defines HOOKRELAY_COMPILED) rather
 * than the source run by bun: the binary runs its own subcommands and loads its threads by their entry names.
 */
declare const HOOKRELAY_COMPILED: boolean | undefined;

export const COMPILED: boolean = typeof HOOKRELAY_COMPILED !== 'undefined' && HOOKRELAY_COMPILED;
