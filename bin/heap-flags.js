// V8's heap settings for every command (bin/service.js), and for the floor the benchmarks measure
// beside the gateway (bench/floor-gateway.mjs), so both hold memory alike.
//
// A gateway spends most of its life idle between short turns, and what it keeps is small. So: a
// young generation that stays at its initial size (1 MB semi-spaces rather than growing to 8-16
// MB), and an old generation collected once it grows 20% past what survived the last full
// collection (rather than up to 4x): measured, 14 MB less resident at idle and 8 MB less after a
// burst of turns, for no CPU per turn we could measure. Set before anything else loads, while the
// heap is new.
import v8 from 'node:v8';

export function applyHeapFlags() {
  v8.setFlagsFromString('--semi-space-growth-factor=1');
  v8.setFlagsFromString('--heap-growing-percent=20');
}
