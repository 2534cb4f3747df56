/**
 * The store's history (see types.ts for the rest): each session key's messages, what a client
 * shows again after a reload. Kept apart so the history's own words stay beside it.
 */

/**
 * How an assistant reply that did not complete ended: aborted (Stop, `/stop`, `POST /abort`,
 * shutdown) or failed, with the text that had arrived stored as its reply.
 */
export type UnfinishedStatus = 'aborted' | 'failed';

export interface HistoryEntry {
  key: string;
  role: 'user' | 'assistant';
  text: string;
  ts: number;
  /** An assistant reply that did not complete; absent when it did (and on every user message). */
  status?: UnfinishedStatus;
  /** What its completion said with that status ("Aborted: the gateway is shutting down"), shown with the reply. */
  message?: string;
}

export interface HistoryStore {
  appendHistory(entry: HistoryEntry): Promise<void>;
  /** Oldest first; the newest `limit` entries when given. */
  readHistory(key: string, limit?: number): Promise<HistoryEntry[]>;
  clearHistory(key: string): Promise<void>;
}
