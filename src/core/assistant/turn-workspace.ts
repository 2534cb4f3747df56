import { type DecodedFile, promptWithFiles, saveIncomingFiles } from '../files/incoming.js';
import { type Outbox, openOutbox } from '../files/outbox.js';
import type { AssistantPaths } from '../paths.js';
import { type DecodedImage, removeFiles, writeTurnImages } from './images.js';

/**
 * Step "prepare the workspace" of a turn (turn-pipeline.ts): the files sent with the message are
 * saved into the workspace (`inbox/<day>/`, kept: the agent may come back to them) and named in
 * the prompt; the images are written under `.service/images/`; the turn's outbox folder is made
 * (the engine finds it in SERVICE_OUTBOX). What it takes, the images and the outbox, goes when the
 * workspace is disposed, however the turn ended (a failed or aborted turn's outbox is discarded).
 */
export interface TurnWorkspace extends Disposable {
  /** The prompt, with the saved files named after it. */
  readonly prompt: string;
  /** Absolute paths of the turn's images. */
  readonly images: readonly string[];
  readonly outbox: Outbox;
}

export interface WorkspaceInput {
  prompt: string;
  images: readonly DecodedImage[];
  files: readonly DecodedFile[];
}

export function prepareWorkspace(
  paths: Pick<AssistantPaths, 'dir' | 'imagesDir' | 'outboxDir'>,
  input: WorkspaceInput,
  now: number,
): { ok: true; workspace: TurnWorkspace } | { ok: false; message: string } {
  let images: string[] = [];
  try {
    const prompt = promptWithFiles(input.prompt, saveIncomingFiles(paths.dir, input.files, now));
    images = writeTurnImages(paths.imagesDir, input.images);
    const outbox = openOutbox(paths.outboxDir);
    const workspace: TurnWorkspace = {
      prompt,
      images,
      outbox,
      [Symbol.dispose]() {
        removeFiles(images);
        outbox.remove();
      },
    };
    return { ok: true, workspace };
  } catch (err) {
    removeFiles(images);
    return { ok: false, message: `turn failed: ${(err as Error).message}` };
  }
}
