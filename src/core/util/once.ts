/** The first call runs `fn`; every later call gets the first call's result (idempotent close, stop). */
export function once<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  let ran: { result: R } | undefined;
  return (...args) => {
    ran ??= { result: fn(...args) };
    return ran.result;
  };
}
