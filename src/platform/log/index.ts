/**
 * The `log` destination as a Platform: records what would have been sent to Flow, so a new install runs end to
 * end. What it would send is Flow's (its payload, size rule, resource ids, trigger readiness): the registry hands
 * those over, so this folder imports no other platform's.
 */
import type { Platform, PlatformChecks } from '../types.ts';
import { logDestination } from './destination.ts';

/** What the log platform takes from the platform whose handoff it stands in for (Shopify Flow). */
export type StandIn = Pick<Platform, 'handoff' | 'refusal' | 'resourceId' | 'withoutWorkflow' | 'credentialsView' | 'credentialMode' | 'budgetView'> & {
  /** The text of the lifecycle checklist item (done: nothing is sent, so nothing needs verifying). */
  lifecycleCheck: string;
};

const destinations = new WeakMap<object, ReturnType<typeof logDestination>>();

export function logPlatform(flow: StandIn): Platform {
  const checks: PlatformChecks = {
    destination_configured: { done: true, text: 'Destination is log: events are recorded, not sent to Flow.' },
    destination_reachable: { done: true, text: 'Nothing is sent with the log destination.' },
    api_version_supported: { done: true, text: 'No platform API is called with the log destination.' },
    lifecycle_callback_verifiable: { done: true, text: flow.lifecycleCheck },
  };
  return {
    name: 'log',
    destination(core) {
      let d = destinations.get(core.repo);
      if (!d) destinations.set(core.repo, (d = logDestination(core.log)));
      return d;
    },
    handoff: flow.handoff,
    refusal: flow.refusal,
    resourceId: flow.resourceId,
    withoutWorkflow: flow.withoutWorkflow,
    startsAlerts: false,
    routes: () => [],
    describeStore: (s) => `store ${s.shopDomain}: destination log (records what would go to Flow; nothing is sent)`,
    credentialVariableMissing: () => false,
    checkStore: () => {},
    forget: () => {},
    linkState: async () => null,
    credentialsView: flow.credentialsView,
    credentialMode: flow.credentialMode,
    budgetView: flow.budgetView,
    setupChecks: () => checks,
    secretEnv: [],
    startWarnings: () => [],
  };
}
