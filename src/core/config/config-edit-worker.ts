import { parentPort } from 'node:worker_threads';
import { type EditReply, type EditRequest, errorToWire } from './edit-thread.js';
import { mergeText } from './write-back.js';

/** The PATCH worker thread (edit-thread.ts): one merge per message, answered by id. */
parentPort?.on('message', ({ id, job }: EditRequest) => {
  let reply: EditReply;
  try {
    reply = { id, ok: true, result: mergeText(job) };
  } catch (err) {
    reply = { id, ok: false, error: errorToWire(err) };
  }
  parentPort?.postMessage(reply);
});
