/** Builds dist/hookrelay: one self-contained executable (migrations bundled; ignores bunfig.toml and .env at run time). */
export {};
const outfile = process.argv[2] ?? 'dist/hookrelay';

const result = await Bun.build({
  entrypoints: ['./commands/index.ts'],
  compile: { outfile, autoloadBunfig: false, autoloadDotenv: false },
  minify: true,
  define: { 'process.env.NODE_ENV': '"production"' },
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.error(`built ${outfile}`);
