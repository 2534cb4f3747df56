/**
 * The package's exports: the embedding API (src/embedding.ts) and the public types.
 *
 * @example
 * import { createAssistant, startServer } from 'agent-service';
 * const bot = createAssistant({ dir: './my-assistant' });
 * const server = await startServer(bot, { port: 0 });
 * console.log(server.url, server.token);
 */
export { createAssistant, startGateway, startServer } from './embedding.js';
export type { CreateAssistantOptions, EmbeddedAssistant, GatewayOptions, ServerHandle, ServerOptions } from './embedding.js';

export type { Assistant, AssistantStatus, ChatOptions } from './core/assistant/assistant.js';
export type { CommandResult } from './core/commands/command-table.js';
export type { ImageInput } from './core/assistant/images.js';
export type { Completion, CompletionStatus, StreamEvent } from './core/events.js';
export type { Logger } from './core/logger.js';
export type { Clock } from './core/scheduler/clock.js';
export type { ActivityRecord, Metrics } from './core/store/types.js';
export type { ServiceConfig } from './core/config/schema.js';
export type { ChannelAdapter, ChannelContext, ChannelDefinition, InboundMessage, ReplyTarget, SentMessage } from './channels/types.js';
