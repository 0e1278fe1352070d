/**
 * The Flow workflow templates the app ships (shopify/extensions/template-*, type `flow_template`): what each is
 * called, what it does and the trigger it starts from. Setup state's checklist and the Home page list them; the
 * extension tests hold each folder's TOML and template file to these and to the handles and fields that exist.
 * Free of zod.
 */
import { ALERT_TRIGGER, CONFIRM_ACTION, TRIGGERS } from './triggers.ts';

export interface FlowTemplate {
  /** The extension folder under shopify/extensions. */
  dir: string;
  handle: string;
  name: string;
  description: string;
  /** The handle of the hookrelay trigger the workflow starts from. */
  trigger: string;
  /** The hookrelay action it uses, if any. */
  action: string | null;
}

export const FLOW_TEMPLATES: readonly FlowTemplate[] = [
  {
    dir: 'template-tag-order',
    handle: 'hookrelay-tpl-tag-order',
    name: 'Tag the order when an external event arrives',
    description:
      'When a sender posts an event about an order to hookrelay and its score field is below 3, tag the order hookrelay-low-score. Change the field name, the test or the tag to fit your sender.',
    trigger: TRIGGERS.order.handle,
    action: null,
  },
  {
    dir: 'template-confirm-run',
    handle: 'hookrelay-tpl-confirm-run',
    name: 'Confirm each run',
    description:
      'Ends a workflow started by a hookrelay event with the Confirm hookrelay event action, so hookrelay shows which events your workflow finished. Put your own steps before it.',
    trigger: TRIGGERS.generic.handle,
    action: CONFIRM_ACTION.handle,
  },
  {
    dir: 'template-sender-silent',
    handle: 'hookrelay-tpl-sender-silent',
    name: 'Tell me when a sender falls silent',
    description:
      'When hookrelay raises a silence alert (an endpoint with a silence watch received nothing for longer than expected), email the store staff what happened and what to do.',
    trigger: ALERT_TRIGGER.handle,
    action: null,
  },
];
