/**
 * The Lark long-connection frame (`pbbp2.Frame`), defined here with protobufjs reflection from the
 * field list the SDK's generated coder uses (@larksuiteoapi/node-sdk 1.74.0 lib/index.js, `pbbp2.Frame`
 * encode/decode). proto2 semantics: SeqID, LogID, service and method are `required` (the SDK's decoder
 * throws "missing required 'SeqID'" when one is absent), header key/value are required too.
 */
import protobuf from 'protobufjs';

/**
 * Built on first use, not at import: the SDK sets protobufjs' shared `util.Long` aside when it
 * loads, and a decoder compiled before that calls `util.Long.fromNumber` on undefined. By the
 * time a frame flows, the SDK (in the adapter under test) has loaded.
 */
let frameType: protobuf.Type | undefined;
function frame(): protobuf.Type {
  if (frameType) return frameType;
  const Header = new protobuf.Type('Header').add(new protobuf.Field('key', 1, 'string', 'required')).add(new protobuf.Field('value', 2, 'string', 'required'));
  const Frame = new protobuf.Type('Frame')
    .add(new protobuf.Field('SeqID', 1, 'uint64', 'required'))
    .add(new protobuf.Field('LogID', 2, 'uint64', 'required'))
    .add(new protobuf.Field('service', 3, 'int32', 'required'))
    .add(new protobuf.Field('method', 4, 'int32', 'required'))
    .add(new protobuf.Field('headers', 5, 'Header', 'repeated'))
    .add(new protobuf.Field('payloadEncoding', 6, 'string', 'optional'))
    .add(new protobuf.Field('payloadType', 7, 'string', 'optional'))
    .add(new protobuf.Field('payload', 8, 'bytes', 'optional'))
    .add(new protobuf.Field('LogIDNew', 9, 'string', 'optional'));
  new protobuf.Root().define('pbbp2').add(Header).add(Frame);
  frameType = Frame;
  return Frame;
}

/** method values */
export const FRAME_CONTROL = 0;
export const FRAME_DATA = 1;

export interface LarkFrame {
  SeqID: number;
  LogID: number;
  service: number;
  method: number;
  headers: Array<{ key: string; value: string }>;
  payloadEncoding?: string;
  payloadType?: string;
  payload?: Uint8Array;
  LogIDNew?: string;
}

export function encodeFrame(value: LarkFrame): Buffer {
  const Frame = frame();
  return Buffer.from(Frame.encode(Frame.fromObject(value)).finish());
}

export function decodeFrame(data: Uint8Array): LarkFrame {
  const Frame = frame();
  const msg = Frame.decode(data);
  // longs: Number turns the uint64 fields (Long objects when `long` is installed) into numbers.
  const obj = Frame.toObject(msg, { longs: Number, arrays: true }) as LarkFrame;
  return obj;
}

export function headerMap(frame: LarkFrame): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of frame.headers) out[h.key] = h.value;
  return out;
}
