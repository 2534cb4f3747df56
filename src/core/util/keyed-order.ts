/**
 * Run async steps one at a time per key, in call order. For work that must keep its order across
 * awaits whose completion order is not guaranteed (reads on a server store finish in any order):
 * a later call for the key starts only once the earlier one settled. Keys are forgotten when idle.
 */
export function createKeyedOrder(): <T>(key: string, step: () => Promise<T>) => Promise<T> {
  const tails = new Map<string, Promise<unknown>>();
  return (key, step) => {
    const next = (tails.get(key) ?? Promise.resolve()).then(step);
    const tail = next.catch(() => undefined);
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return next;
  };
}
