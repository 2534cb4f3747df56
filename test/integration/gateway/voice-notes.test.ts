/**
 * Voice notes become text: a voice message on Telegram, Slack, Discord, Lark and DingTalk (the
 * channels whose SDK delivers the recording; WeCom's delivers only its own transcript) goes through
 * the real gateway, the platform's real SDK and its fake, is transcribed by a fake
 * OpenAI-compatible endpoint, and reaches the engine as a marked transcript with the recording
 * still attached. A failed transcription is told to the sender and the recording still reaches the
 * engine; `streaming` shows what was heard first. DingTalk's own transcript stands in when
 * transcription is off or fails.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { type FakeTranscription, startFakeTranscription } from '../../fakes/transcription.js';
import { PLATFORMS, type PlatformSpec, replies, usePlatformGateway } from '../../helpers/channel-gateway.js';
import { cleanupAfterEach } from '../../helpers/resources.js';
import { HANG_MS } from '../../helpers/wait.js';

const defer = cleanupAfterEach();

/** The recording each platform delivers for a voice note, and the file name the agent sees. */
const VOICE: Record<string, { mimeType: string; name: RegExp }> = {
  channel_e: { mimeType: 'audio/ogg', name: /^voice\.ogg$/ },
  channel_d: { mimeType: 'audio/webm', name: /^audio_message\.webm$/ },
  channel_f: { mimeType: 'audio/ogg', name: /^voice-message\.ogg$/ },
  channel_a: { mimeType: 'audio/ogg', name: /^audio\.opus$/ },
  channel_b: { mimeType: 'audio/amr', name: /^voice\.amr$/ },
};
const SPECS = Object.keys(VOICE).map((k) => PLATFORMS[k] as PlatformSpec);
const RECORDING = Buffer.from('OggS fake opus frames of a voice note');

async function withTranscription(): Promise<{ stt: FakeTranscription; yaml: string }> {
  const stt = await startFakeTranscription();
  defer(() => stt.close());
  stt.say(RECORDING, 'hello from the phone');
  const yaml = `transcription:\n  baseUrl: ${stt.baseUrl}\n  apiKey: \${STT_KEY}\n  model: whisper-large-v3\n`;
  process.env.STT_KEY = stt.apiKey;
  return { stt, yaml };
}

/** `recognition`: the platform's own transcript, where it makes one (DingTalk; the other fakes ignore it). */
const sendVoice = (f: FakePlatform, spec: PlatformSpec, recognition?: string) =>
  f.deliver({
    chatType: 'direct',
    userId: spec.users[0],
    text: '',
    voice: { mimeType: VOICE[spec.key]?.mimeType ?? 'audio/ogg', data: RECORDING, ...(recognition ? { recognition } : {}) },
  });

const promptOf = (runs: Array<Record<string, unknown>>) => String(runs[0]?.prompt ?? '');

describe.each(SPECS)('$key: voice notes', (spec) => {
  const setup = usePlatformGateway(spec);

  it('reach the engine as a marked transcript, with the recording attached', async () => {
    const { stt, yaml } = await withTranscription();
    const { fake: f, gw: g } = await setup(yaml);
    await sendVoice(f, spec, 'as the platform heard it');
    await f.waitForOutbound((o) => o.text.includes('ECHO:'), HANG_MS);
    expect(stt.requests).toHaveLength(1);
    expect(stt.requests[0]).toMatchObject({ model: 'whisper-large-v3', bytes: RECORDING.length, authorization: `Bearer ${stt.apiKey}` });
    expect(stt.requests[0]?.fileName).toMatch(VOICE[spec.key]?.name ?? /./);
    const prompt = promptOf(g.standIn.runs());
    expect(prompt).toMatch(/^\[Voice message [^\]]+, transcribed\]: hello from the phone/);
    expect(prompt).not.toContain('as the platform heard it'); // the configured service's transcript, not the platform's
    // The recording is in the workspace, named in the prompt, as any file sent is.
    const saved = [...prompt.matchAll(/inbox\/[^\s)]+/g)].map((m) => m[0]);
    expect(saved).toHaveLength(1);
    expect(fs.readFileSync(path.join(g.dir, saved[0] ?? ''))).toEqual(RECORDING);
    expect(replies(f).map((o) => o.text)).toEqual([expect.stringContaining('ECHO: [Voice message')]);
  });

  it('a failed transcription is told to the sender, and the recording still reaches the engine', async () => {
    const { stt, yaml } = await withTranscription();
    stt.failNext(500);
    const { fake: f, gw: g } = await setup(yaml);
    await sendVoice(f, spec);
    const notice = await f.waitForOutbound((o) => o.text.includes('could not transcribe'), HANG_MS);
    expect(notice.text).toBe('I could not transcribe your voice message (the transcription service answered 500); it is passed on as a file.');
    await f.waitForOutbound((o) => o.text.includes('ECHO:'), HANG_MS);
    const prompt = promptOf(g.standIn.runs());
    expect(prompt).not.toContain('transcribed');
    expect(prompt).toMatch(/inbox\/\S+/);
  });
});

describe.each(SPECS)('$key: voice notes in streaming mode', (spec) => {
  const setup = usePlatformGateway(spec);

  it('the growing reply starts with what was heard, and ends as the whole reply under it', async () => {
    const { yaml } = await withTranscription();
    const { fake: f, gw: g } = await setup(`${yaml}streaming:\n  mode: streaming\n`);
    await sendVoice(f, spec);
    await f.waitForOutbound((o) => o.text.includes('ECHO:') && (o.kind !== 'stream' || o.finished !== false), HANG_MS);
    await g.processed(1);
    const shown = replies(f).map((o) => o.text.replace(/\\/g, ''));
    // Every version of the reply starts with the transcript (Lark's card first shows a placeholder).
    for (const t of shown.filter((x) => x !== '…')) expect(t.split('\n')[0]).toBe('🎤 "hello from the phone"');
    expect(shown.at(-1)).toMatch(/^🎤 "hello from the phone"\n\nECHO: \[Voice message \S+, transcribed\]: hello from the phone/);
  });
});

describe('DingTalk: its own transcript of a voice message', () => {
  const spec = PLATFORMS.channel_b as PlatformSpec;
  const setup = usePlatformGateway(spec);

  it('transcription off: the engine reads the platform transcript, marked, with the recording attached', async () => {
    const { fake: f, gw: g } = await setup();
    await sendVoice(f, spec, '明天的日程');
    await f.waitForOutbound((o) => o.text.includes('ECHO:'), HANG_MS);
    const prompt = promptOf(g.standIn.runs());
    expect(prompt).toMatch(/^\[Voice message voice\.amr, transcribed by the platform\]: 明天的日程/);
    const saved = [...prompt.matchAll(/inbox\/[^\s)]+/g)].map((m) => m[0]);
    expect(saved).toHaveLength(1);
    expect(fs.readFileSync(path.join(g.dir, saved[0] ?? ''))).toEqual(RECORDING);
  });

  it('a failed transcription: the sender is told, the engine reads the platform transcript and gets the recording', async () => {
    const { stt, yaml } = await withTranscription();
    stt.failNext(500);
    const { fake: f, gw: g } = await setup(yaml);
    await sendVoice(f, spec, '明天的日程');
    const notice = await f.waitForOutbound((o) => o.text.includes('could not transcribe'), HANG_MS);
    expect(notice.text).toBe(
      "I could not transcribe your voice message (the transcription service answered 500); it is passed on as a file, with the platform's own transcript.",
    );
    await f.waitForOutbound((o) => o.text.includes('ECHO:'), HANG_MS);
    const prompt = promptOf(g.standIn.runs());
    expect(prompt).toMatch(/^\[Voice message voice\.amr, transcribed by the platform\]: 明天的日程/);
    expect(prompt).toMatch(/inbox\/\S+voice\.amr/);
  });
});

describe('DingTalk: a recording that cannot be downloaded', () => {
  const spec = PLATFORMS.channel_b as PlatformSpec;
  const setup = usePlatformGateway(spec);

  it('the sender is told in words about a voice message, not an unnamed file; the engine still reads the platform transcript', async () => {
    const { fake: f, gw: g } = await setup();
    await f.deliver({
      chatType: 'direct',
      userId: spec.users[0],
      text: '',
      voice: { mimeType: 'audio/amr', data: RECORDING, recognition: '明天的日程', gone: true },
    });
    const notice = await f.waitForOutbound((o) => o.text.includes('was not saved'), HANG_MS);
    expect(notice.text).toBe('Your voice message was not saved: the download failed.');
    await f.waitForOutbound((o) => o.text.includes('ECHO:'), HANG_MS);
    // Nothing was saved, so nothing is named: the engine is not sent looking for a file.
    expect(promptOf(g.standIn.runs())).toMatch(/^\[Voice message, transcribed by the platform\]: 明天的日程/);
  });
});

describe('voice notes, one platform', () => {
  const spec = PLATFORMS.channel_e as PlatformSpec;
  const setup = usePlatformGateway(spec);

  it('without `transcription` the recording goes to the engine as a file, as before', async () => {
    const stt = await startFakeTranscription();
    defer(() => stt.close());
    const { fake: f, gw: g } = await setup();
    await sendVoice(f, spec);
    await f.waitForOutbound((o) => o.text.includes('ECHO:'), HANG_MS);
    expect(stt.requests).toEqual([]);
    expect(promptOf(g.standIn.runs())).toMatch(/inbox\/\S+voice\.ogg/);
  });

  it('a wrong key: the service refuses (401), the sender is told, the turn goes on', async () => {
    const { stt } = await withTranscription();
    const { fake: f } = await setup(`transcription:\n  baseUrl: ${stt.baseUrl}\n  apiKey: wrong-key\n`);
    await sendVoice(f, spec);
    await f.waitForOutbound((o) => o.text.includes('answered 401'), HANG_MS);
    await f.waitForOutbound((o) => o.text.includes('ECHO:'), HANG_MS);
    expect(stt.requests[0]?.model).toBe('whisper-1'); // the default model
  });
});
