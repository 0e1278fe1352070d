import { defineCommand } from 'citty';
import { describeConfig } from '../src/client/config.ts';
import { runDoctor } from '../src/client/doctor.ts';
import { connectionArgs } from './_args.ts';
import { connect, emit } from './_cli.ts';
import { CommandExit } from './_exit.ts';

export default defineCommand({
  meta: {
    name: 'doctor',
    examples: ['hookrelay doctor --profile prod'],
    description: 'Checks the base URL, manifest, edition, OpenAPI, docs, grant, expected context and clock skew; exit 0 only when all pass',
  },
  args: { ...connectionArgs },
  async run({ args }) {
    const { client, config, log } = await connect(args, { token: 'optional' });
    const report = await runDoctor(client, config);
    for (const c of report.checks) {
      if (c.ok) log.success(`${c.name}: ${c.detail}`);
      else log.fail(`${c.name}: ${c.detail}${c.hint ? ` — ${c.hint}` : ''}`);
    }
    const doc = { ok: report.ok, summary: report.summary, config: describeConfig(config), checks: report.checks };
    if (!report.ok) throw new CommandExit(doc, report.exitCode);
    emit(doc);
  },
});
