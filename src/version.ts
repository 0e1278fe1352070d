/** The release of this build; kept apart so `hookrelay --version` and client commands do not load the server. */
export const VERSION = '0.1.0';
