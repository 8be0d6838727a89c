// One neutral value model for the CEL comparison: expected conformance values (cel.expr.Value) and each
// library's native results are converted into it, then compared with CEL value equality.
import type { Type } from '@bufbuild/cel-spec/cel/expr/checked_pb.js';
import type { Value } from '@bufbuild/cel-spec/cel/expr/value_pb.js';
import { equals, type Message, type Registry } from '@bufbuild/protobuf';
import { type Any, anyUnpack } from '@bufbuild/protobuf/wkt';

export type Canon =
  | { k: 'null' }
  | { k: 'bool'; v: boolean }
  | { k: 'int'; v: bigint }
  | { k: 'uint'; v: bigint }
  | { k: 'double'; v: number }
  /** A JS number from a library with a single numeric type (cel-js): it matches int, uint or double. */
  | { k: 'number'; v: number }
  | { k: 'string'; v: string }
  | { k: 'bytes'; v: Uint8Array }
  | { k: 'list'; v: Canon[] }
  | { k: 'map'; v: Array<[Canon, Canon]> }
  | { k: 'type'; v: string }
  | { k: 'timestamp'; seconds: bigint; nanos: number }
  | { k: 'duration'; seconds: bigint; nanos: number }
  | { k: 'enum'; type: string; v: number }
  | { k: 'message'; type: string; msg: Message }
  /** Something the adapter could not map; equal to nothing. */
  | { k: 'opaque'; v: string };

/** cel.expr.Value → Canon. Throws when an Any names a type the registry does not know. */
export function canonFromValue(value: Value, registry: Registry): Canon {
  const kind = value.kind;
  switch (kind.case) {
    case 'nullValue':
      return { k: 'null' };
    case 'boolValue':
      return { k: 'bool', v: kind.value };
    case 'int64Value':
      return { k: 'int', v: kind.value };
    case 'uint64Value':
      return { k: 'uint', v: kind.value };
    case 'doubleValue':
      return { k: 'double', v: kind.value };
    case 'stringValue':
      return { k: 'string', v: kind.value };
    case 'bytesValue':
      return { k: 'bytes', v: kind.value };
    case 'enumValue':
      return { k: 'enum', type: kind.value.type, v: kind.value.value };
    case 'typeValue':
      return { k: 'type', v: kind.value };
    case 'listValue':
      return { k: 'list', v: kind.value.values.map((e) => canonFromValue(e, registry)) };
    case 'mapValue':
      return {
        k: 'map',
        v: kind.value.entries.map((e) => {
          if (e.key === undefined || e.value === undefined) throw new Error('map entry without key or value');
          return [canonFromValue(e.key, registry), canonFromValue(e.value, registry)];
        }),
      };
    case 'objectValue':
      return canonFromMessage(unpack(kind.value, registry), registry);
    case undefined:
      throw new Error('cel.expr.Value without a kind');
  }
}

export function unpack(any: Any, registry: Registry): Message {
  const msg = anyUnpack(any, registry);
  if (msg === undefined) throw new Error(`unknown message type ${any.typeUrl}`);
  return msg;
}

const WRAPPERS: Record<string, 'int' | 'uint' | 'double' | 'bool' | 'string' | 'bytes'> = {
  'google.protobuf.Int32Value': 'int',
  'google.protobuf.Int64Value': 'int',
  'google.protobuf.UInt32Value': 'uint',
  'google.protobuf.UInt64Value': 'uint',
  'google.protobuf.FloatValue': 'double',
  'google.protobuf.DoubleValue': 'double',
  'google.protobuf.BoolValue': 'bool',
  'google.protobuf.StringValue': 'string',
  'google.protobuf.BytesValue': 'bytes',
};

/**
 * A protobuf message as CEL sees it: well-known types become CEL values (Timestamp, Duration, wrappers,
 * the JSON types), anything else stays a message compared by protobuf equality.
 */
export function canonFromMessage(msg: Message, registry: Registry): Canon {
  const m = msg as Message & Record<string, unknown>;
  const type = msg.$typeName;
  if (type === 'google.protobuf.Timestamp' || type === 'google.protobuf.Duration') {
    return {
      k: type === 'google.protobuf.Timestamp' ? 'timestamp' : 'duration',
      seconds: BigInt(m['seconds'] as bigint),
      nanos: Number(m['nanos']),
    };
  }
  const wrapped = WRAPPERS[type];
  if (wrapped !== undefined) {
    const v = m['value'];
    switch (wrapped) {
      case 'int':
      case 'uint':
        return { k: wrapped, v: BigInt(v as number | bigint) };
      case 'double':
        return { k: 'double', v: v as number };
      case 'bool':
        return { k: 'bool', v: v as boolean };
      case 'string':
        return { k: 'string', v: v as string };
      case 'bytes':
        return { k: 'bytes', v: v as Uint8Array };
    }
  }
  if (type === 'google.protobuf.Value') return canonFromJsonValue(m);
  if (type === 'google.protobuf.Struct') return canonFromStruct(m);
  if (type === 'google.protobuf.ListValue') return canonFromListValue(m);
  if (type === 'google.protobuf.Any') return canonFromMessage(unpack(msg as Any, registry), registry);
  return { k: 'message', type, msg };
}

function canonFromJsonValue(m: Record<string, unknown>): Canon {
  const kind = m['kind'] as { case: string | undefined; value: unknown };
  switch (kind.case) {
    case 'nullValue':
    case undefined:
      return { k: 'null' };
    case 'numberValue':
      return { k: 'double', v: kind.value as number };
    case 'stringValue':
      return { k: 'string', v: kind.value as string };
    case 'boolValue':
      return { k: 'bool', v: kind.value as boolean };
    case 'structValue':
      return canonFromStruct(kind.value as Record<string, unknown>);
    case 'listValue':
      return canonFromListValue(kind.value as Record<string, unknown>);
    default:
      return { k: 'opaque', v: `google.protobuf.Value ${kind.case}` };
  }
}

function canonFromStruct(m: Record<string, unknown>): Canon {
  const fields = m['fields'] as Record<string, Record<string, unknown>>;
  return {
    k: 'map',
    v: Object.entries(fields).map(([key, v]) => [{ k: 'string', v: key }, canonFromJsonValue(v)]),
  };
}

function canonFromListValue(m: Record<string, unknown>): Canon {
  return { k: 'list', v: (m['values'] as Array<Record<string, unknown>>).map(canonFromJsonValue) };
}

const NUMERIC = new Set(['int', 'uint', 'double', 'number']);

/** CEL value equality as the conformance suite asks: maps ignore order, NaN equals NaN. */
export function canonEqual(a: Canon, b: Canon, registry: Registry): boolean {
  if ((a.k === 'number' || b.k === 'number') && NUMERIC.has(a.k) && NUMERIC.has(b.k)) {
    const x = Number((a as { v: number | bigint }).v);
    const y = Number((b as { v: number | bigint }).v);
    return x === y || (Number.isNaN(x) && Number.isNaN(y));
  }
  switch (a.k) {
    case 'null':
      return b.k === 'null';
    case 'bool':
    case 'int':
    case 'uint':
    case 'string':
      return b.k === a.k && b.v === a.v;
    case 'double':
      return b.k === 'double' && (a.v === b.v || (Number.isNaN(a.v) && Number.isNaN(b.v)));
    case 'number':
      return false;
    case 'bytes':
      return b.k === 'bytes' && a.v.length === b.v.length && a.v.every((x, i) => b.v[i] === x);
    case 'list':
      return (
        b.k === 'list' && a.v.length === b.v.length && a.v.every((x, i) => canonEqual(x, b.v[i]!, registry))
      );
    case 'map':
      return (
        b.k === 'map' &&
        a.v.length === b.v.length &&
        a.v.every(([ka, va]) =>
          b.v.some(([kb, vb]) => canonEqual(ka, kb, registry) && canonEqual(va, vb, registry)),
        )
      );
    case 'type':
      return b.k === 'type' && normalizeTypeName(a.v) === normalizeTypeName(b.v);
    case 'timestamp':
    case 'duration':
      return b.k === a.k && b.seconds === a.seconds && b.nanos === a.nanos;
    case 'enum':
      return b.k === 'enum' && b.type === a.type && b.v === a.v;
    case 'message': {
      if (b.k !== 'message' || b.type !== a.type) return false;
      const schema = registry.getMessage(a.type);
      return schema !== undefined && equals(schema, a.msg, b.msg, { registry, unpackAny: true });
    }
    case 'opaque':
      return false;
  }
}

/**
 * A checker's type as one spelling: `list(int)` and `list<int>` agree, `optional_type` is `optional`,
 * `null_type` is `null`, and `list<dyn>`/`map<dyn, dyn>` are the bare `list`/`map`.
 */
export function normalizeTypeName(t: string): string {
  return t
    .replace(/\s+/g, '')
    .replaceAll('(', '<')
    .replaceAll(')', '>')
    .replace(/\boptional_type\b/g, 'optional')
    .replace(/\bnull_type\b/g, 'null')
    .replace(/\blist<dyn>/g, 'list')
    .replace(/\bmap<dyn,dyn>/g, 'map');
}

const PRIMITIVE_NAMES = ['', 'bool', 'int', 'uint', 'double', 'string', 'bytes'] as const;
const WELL_KNOWN_NAMES = ['', 'google.protobuf.Any', 'google.protobuf.Timestamp', 'google.protobuf.Duration'];

/** cel.expr.Type → CEL type spelling (`map<string, list<int>>`); undefined for a kind we cannot spell. */
export function typeName(t: Type | undefined): string | undefined {
  const kind = t?.typeKind;
  switch (kind?.case) {
    case 'dyn':
      return 'dyn';
    case 'null':
      return 'null';
    case 'primitive':
      return PRIMITIVE_NAMES[kind.value] || undefined;
    case 'wrapper': {
      const inner = PRIMITIVE_NAMES[kind.value];
      return inner ? `wrapper(${inner})` : undefined;
    }
    case 'wellKnown':
      return WELL_KNOWN_NAMES[kind.value] || undefined;
    case 'listType': {
      const e = typeName(kind.value.elemType);
      return e === undefined ? undefined : `list<${e}>`;
    }
    case 'mapType': {
      const k = typeName(kind.value.keyType);
      const v = typeName(kind.value.valueType);
      return k === undefined || v === undefined ? undefined : `map<${k}, ${v}>`;
    }
    case 'messageType':
      return kind.value;
    case 'typeParam':
      return kind.value;
    case 'type': {
      const inner = typeName(kind.value);
      return inner === undefined ? 'type' : `type<${inner}>`;
    }
    case 'abstractType': {
      const params = kind.value.parameterTypes.map(typeName);
      if (params.some((p) => p === undefined)) return undefined;
      return params.length === 0 ? kind.value.name : `${kind.value.name}<${params.join(', ')}>`;
    }
    default:
      return undefined;
  }
}

/** Short text of a Canon for failure listings. */
export function showCanon(c: Canon): string {
  switch (c.k) {
    case 'null':
      return 'null';
    case 'bool':
    case 'double':
      return String(c.v);
    case 'number':
      return `${c.v} (number)`;
    case 'int':
      return String(c.v);
    case 'uint':
      return `${c.v}u`;
    case 'string':
      return JSON.stringify(c.v);
    case 'bytes':
      return `b[${c.v.length}]`;
    case 'list':
      return `[${c.v.map(showCanon).join(', ')}]`;
    case 'map':
      return `{${c.v.map(([k, v]) => `${showCanon(k)}: ${showCanon(v)}`).join(', ')}}`;
    case 'type':
      return `type(${c.v})`;
    case 'timestamp':
    case 'duration':
      return `${c.k}(${c.seconds}s ${c.nanos}ns)`;
    case 'enum':
      return `${c.type}(${c.v})`;
    case 'message':
      return c.type;
    case 'opaque':
      return `<${c.v}>`;
  }
}
