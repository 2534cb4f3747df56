import { type DWClientDownStream, TOPIC_CARD, TOPIC_ROBOT } from 'dingtalk-stream';
import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { LifecycleSteps } from '../lifecycle.js';
import { type ChannelContext, ChannelError, type ReplyTarget } from '../types.js';
import { type CardCallbackData, createPressMessage, parseCardPress } from './approval.js';
import { normalizeRobotMessage, type RobotPayload } from './inbound.js';
import { DingtalkStreamClient } from './stream-client.js';

/** channel_b options, as validated by the definition in index.ts. */
export interface DingtalkOptions {
  clientId: string;
  clientSecret: string;
  /** Base of the stream gateway (connections/open) and of the OpenAPI. */
  apiBaseUrl?: string | undefined;
  /** Base of the older API (media upload); https://oapi.dingtalk.com by default. */
  oapiBaseUrl?: string | undefined;
  /** A card-builder template with Allow / Deny / Always buttons (see approval.ts); without it approvals are text. */
  approvalCardTemplateId?: string | undefined;
}

/** Timing knobs; production uses the defaults, tests shorten them. */
export interface DingtalkTuning {
  reconnectMs?: number;
  maxReconnectMs?: number;
  heartbeatMs?: number;
  requestTimeoutMs?: number;
}

type Status = 'connected' | 'disconnected' | 'failed';

/**
 * The connection side of channel_b: the stream gateway (stream-client.ts: the SDK's DWClient made
 * fit for a long-running gateway, with its own reconnects), its events turned into statuses, and
 * the robot messages and card presses it brings in, each acknowledged once the bridge has it.
 */
export class DingtalkConnection implements LifecycleSteps {
  /** The adapter's logger until connect(), the context's from then on. */
  log: Logger;
  private readonly name: string;
  private readonly opts: DingtalkOptions;
  private readonly tuning: DingtalkTuning;
  /** Where the stream gateway is (https://api.dingtalk.com without a trailing slash by default). */
  private readonly apiBaseUrl: string;
  /** outTrackId → where the approval card was sent (a press carries only the card's outTrackId). */
  private readonly approvalCards: ReadonlyMap<string, ReplyTarget>;
  private client: DingtalkStreamClient | undefined;
  private ctx: ChannelContext | undefined;
  private pendingStart: { resolve: () => void; reject: (err: Error) => void } | undefined;
  private last: { state: string; reason?: string } = { state: 'idle' };

  constructor(
    name: string,
    opts: DingtalkOptions,
    c: { apiBaseUrl: string; tuning: DingtalkTuning; log: Logger; approvalCards: ReadonlyMap<string, ReplyTarget> },
  ) {
    this.name = name;
    this.opts = opts;
    this.apiBaseUrl = c.apiBaseUrl;
    this.tuning = c.tuning;
    this.log = c.log;
    this.approvalCards = c.approvalCards;
  }

  async connect(ctx: ChannelContext): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    this.last = { state: 'starting' };
    const cl = new DingtalkStreamClient({
      name: this.name,
      clientId: this.opts.clientId,
      clientSecret: this.opts.clientSecret,
      apiBaseUrl: this.apiBaseUrl,
      log: this.log,
      ...this.tuning,
    });
    this.client = cl;
    // Must precede connect(): the subscription list is sent with connections/open.
    cl.registerCallbackListener(TOPIC_ROBOT, (frame: DWClientDownStream) => {
      void this.onRobotFrame(frame);
    });
    if (this.opts.approvalCardTemplateId) {
      cl.registerCallbackListener(TOPIC_CARD, (frame: DWClientDownStream) => {
        void this.onCardFrame(frame);
      });
    }
    cl.on('gateway-open', () => this.onOpen());
    cl.on('gateway-error', (err: ChannelError) => this.onGatewayError(err));
    cl.on('gateway-close', (reason: string) => this.report('disconnected', reason));
    await new Promise<void>((resolve, reject) => {
      this.pendingStart = { resolve, reject };
      void cl.connect();
    });
  }

  async release(): Promise<void> {
    const cl = this.client;
    this.client = undefined;
    this.pendingStart?.reject(new ChannelError(this.name, 'network', 'stopped before connecting'));
    this.pendingStart = undefined;
    if (cl) {
      await cl.stop();
      cl.removeAllListeners();
    }
    this.last = { state: 'idle' };
  }

  // --- connection events ---

  private onOpen(): void {
    if (this.pendingStart) {
      this.last = { state: 'connected' };
      this.pendingStart.resolve();
      this.pendingStart = undefined;
    } else {
      this.report('connected');
    }
  }

  private onGatewayError(err: ChannelError): void {
    if (this.pendingStart) {
      // start() fails fast with the reason; the client keeps retrying with backoff and a later
      // success is reported as 'connected'.
      this.last = { state: 'failed', reason: err.message };
      this.pendingStart.reject(err);
      this.pendingStart = undefined;
    } else if (this.last.state !== 'failed') {
      this.report('disconnected', err.message);
    }
  }

  /** onStatus only on a change of state or reason: retries with the same failure stay quiet. */
  private report(state: Status, reason?: string): void {
    if (this.last.state === state && this.last.reason === reason) return;
    this.last = reason === undefined ? { state } : { state, reason };
    this.ctx?.onStatus(reason === undefined ? { state } : { state, reason });
  }

  // --- inbound ---

  /** `response` goes back to DingTalk: for a card callback it is a card update, and an empty one leaves the card as it is. */
  private ack(frameId: string, response: Record<string, unknown> = { success: true }): void {
    try {
      this.client?.socketCallBackResponse(frameId, response);
    } catch (err) {
      this.log.debug(`ack of ${frameId} not sent (DingTalk will redeliver): ${errorMessage(err)}`);
    }
  }

  private async onRobotFrame(frame: DWClientDownStream): Promise<void> {
    const frameId = frame.headers.messageId;
    let payload: RobotPayload;
    try {
      payload = JSON.parse(frame.data) as RobotPayload;
    } catch {
      this.log.warn('dropping a robot callback whose data is not JSON');
      return this.ack(frameId); // unreadable now means unreadable on every redelivery
    }
    const msg = normalizeRobotMessage(this.name, payload);
    if (!msg) {
      this.log.info(`ignoring a ${String(payload.msgtype)} message: only text, rich text and voice are supported`);
      return this.ack(frameId);
    }
    try {
      await this.ctx?.onMessage(msg);
    } catch (err) {
      // Not handed over: leave it unacknowledged so that DingTalk pushes it again.
      this.log.warn(`message ${msg.messageId} not accepted, leaving it unacknowledged: ${errorMessage(err)}`);
      return;
    }
    this.ack(frameId);
  }

  /** A press on an approval card: handed over as the command it stands for, then acknowledged. */
  private async onCardFrame(frame: DWClientDownStream): Promise<void> {
    const frameId = frame.headers.messageId;
    let press: ReturnType<typeof parseCardPress>;
    try {
      press = parseCardPress(JSON.parse(frame.data) as CardCallbackData);
    } catch {
      press = undefined;
    }
    if (!press) {
      this.log.debug('ignoring a card callback that is not an approval answer');
      return this.ack(frameId, {});
    }
    try {
      await this.ctx?.onMessage(createPressMessage(this.name, frameId, press, this.approvalCards.get(press.outTrackId)));
    } catch (err) {
      this.log.warn(`card press ${frameId} not accepted, leaving it unacknowledged: ${errorMessage(err)}`);
      return;
    }
    this.ack(frameId, {});
  }
}
