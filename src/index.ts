/**
 * Embedding API: the same chat core the CLI, the gateway, the channels and the scheduler use.
 *
 * @example
 * const bot = createAssistant({ dir: './my-assistant' });
 * for await (const event of bot.chat('Hello', { sessionKey: 'user-42' })) {
 *   if (event.type === 'text') process.stdout.write(event.content);
 *   if (event.type === 'completion') console.log('\n', event.status);
 * }
 * await bot.close();
 */
import type { Assistant } from './core/assistant/assistant.js';
import { createSilentLogger, type Logger } from './core/logger.js';
import { addTaskRunner, openAssistantDirectory } from './assistant-directory.js';

export interface CreateAssistantOptions {
  /** The assistant directory (service.yaml + skills/). */
  dir: string;
  /** The engine's API key, used instead of its environment variable. */
  apiKey?: string;
  /** Where to log; silent by default. */
  log?: Logger;
}

export interface EmbeddedAssistant extends Assistant {
  /** Let running turns finish (up to `graceMs`), then release the database. */
  close(graceMs?: number): Promise<void>;
}

export function createAssistant(opts: CreateAssistantOptions): EmbeddedAssistant {
  const opened = openAssistantDirectory({ dir: opts.dir, log: opts.log ?? createSilentLogger(), ...(opts.apiKey ? { apiKey: opts.apiKey } : {}) });
  addTaskRunner(opened);
  return {
    ...opened.assistant,
    async close(graceMs = 10_000) {
      await opened.assistant.drain(graceMs);
      opened.close();
    },
  };
}

export type { Assistant, AssistantStatus, ChatOptions } from './core/assistant/assistant.js';
export type { CommandResult } from './core/assistant/slash-commands.js';
export type { ImageInput } from './core/assistant/images.js';
export type { Completion, CompletionStatus, StreamEvent } from './core/events.js';
export type { ActivityRecord, Metrics } from './core/store/types.js';
export type { ServiceConfig } from './core/config/schema.js';
export type { ChannelAdapter, ChannelContext, ChannelDefinition, InboundMessage, ReplyTarget, SentMessage } from './channels/types.js';
