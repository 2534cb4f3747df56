/**
 * The store as its consumers use it, with every failed operation counted (the `store errors` of
 * GET /metrics and the dashboard's status) before the failure goes on to the caller as it was:
 * a rejected promise or a thrown error, whoever handles it. Plain properties (`db`,
 * `coordination`) pass through untouched.
 */
export function countStoreErrors<S extends object>(store: S, onError: (operation: string) => void): S {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      const known = wrapped.get(key);
      if (known) return known;
      const operation = String(key);
      const fn = value as (...args: unknown[]) => unknown;
      const counting = (...args: unknown[]): unknown => {
        let result: unknown;
        try {
          result = fn.apply(target, args);
        } catch (err) {
          onError(operation);
          throw err;
        }
        if (result instanceof Promise) {
          return result.catch((err: unknown) => {
            onError(operation);
            throw err;
          });
        }
        return result;
      };
      wrapped.set(key, counting);
      return counting;
    },
  });
}
