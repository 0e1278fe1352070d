/** Arg fragments shared by commands. */
export const dataDirArg = {
  'data-dir': { type: 'string', description: 'Data directory (default ./.hookrelay, env HOOKRELAY_DATA_DIR)' },
} as const;
