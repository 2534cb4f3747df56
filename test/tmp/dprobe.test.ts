import { createHook } from 'node:async_hooks';
import { it } from 'vitest';
import { channelDefinitions } from '../../src/channels/registry.js';
import { createSilentLogger } from '../../src/core/logger.js';
import { PLATFORMS } from '../helpers/channel-gateway.js';
import { createRecordingContext } from '../helpers/recording-context.js';
import { sleep } from '../helpers/wait.js';

it('probe', async () => {
  const key = process.env.KEY ?? 'channel_f';
  const fake = await PLATFORMS[key]!.start();
  const def = channelDefinitions[key]!;
  const a = await def.create(def.options.parse({ ...fake.channelConfig }), { log: createSilentLogger(), dir: '/tmp', name: key });
  const live = new Map<number, string>();
  const hook = createHook({
    init(id, type) {
      if (type === 'Timeout') live.set(id, new Error().stack ?? '');
    },
    destroy(id) {
      live.delete(id);
    },
  }).enable();
  const p = a.start(createRecordingContext()).catch((e) => e);
  const t0 = Date.now();
  if (process.env.LATE) await sleep(Number(process.env.LATE));
  await a.stop();
  console.log('stop took', Date.now() - t0, String(await p));
  await fake.close();
  await sleep(1500);
  hook.disable();
  console.log(process.getActiveResourcesInfo().join(','));
  for (const s of live.values()) console.log('TIMER', s.split('\n').slice(2, 14).join('\n'));
}, 60000);
