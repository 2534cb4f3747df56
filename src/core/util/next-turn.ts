/** Resolves on a later turn of the event loop (after pending I/O): long work split with it lets other requests in. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
