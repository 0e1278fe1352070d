/** The slice of autocannon's API the bench uses (the package ships no types; @types/autocannon is not a dependency). */
declare module 'autocannon' {
  namespace autocannon {
    interface Options {
      url: string;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      connections?: number;
      pipelining?: number;
      duration?: number;
      timeout?: number;
      requests?: { setupRequest?: (req: Record<string, unknown>, context: Record<string, unknown>) => Record<string, unknown> }[];
    }
    interface Result {
      duration: number;
      requests: { total: number; average: number };
      '2xx': number;
      non2xx: number;
      errors: number;
      timeouts: number;
    }
    interface Instance {
      on(event: 'response', fn: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): void;
      stop(): void;
    }
  }
  function autocannon(opts: autocannon.Options, cb: (err: Error | null, result: autocannon.Result) => void): autocannon.Instance;
  export default autocannon;
}
