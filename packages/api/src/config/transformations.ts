// agentgateway's `transformations` policy (LocalTransformationConfig): CEL expressions that set, add
// and remove headers (pseudo-headers included), replace the whole header set, rewrite the body and
// store metadata, on the request and on the response. A route, listener or gateway may also pick one
// of several by condition (the conditional form); a backend has the plain form only.
import { z } from 'zod';
import { CELExpression } from '../crd/types.ts';
import { explicitOrConditional } from './conditional.ts';

const strict = z.strictObject;
const Cel = CELExpression;

/** Drops the keys whose value is null (agentgateway writes an unset field as null). */
const dropNulls = <T extends Record<string, unknown>>(o: T) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], null>;
  };

/** Pseudo-headers a transformation may set or add: the request's four, the response's status. */
export const TRANSFORM_PSEUDO_HEADERS = [':method', ':scheme', ':authority', ':path', ':status'] as const;

export const LocalTransform = strict({
  add: z
    .record(z.string(), Cel)
    .optional()
    .meta({ description: 'headers to append to, each value a CEL expression' }),
  set: z.record(z.string(), Cel).optional().meta({
    description:
      'headers to set, each value a CEL expression; also :method, :path, :authority, :scheme (request) and :status (response)',
  }),
  remove: z.array(z.string()).optional().meta({ description: 'header names to remove' }),
  replace: Cel.nullable().optional().meta({
    description:
      'CEL giving a map of header name to value (or list of values) that replaces every header; applied before add, set and remove',
  }),
  body: Cel.nullable().optional().meta({
    description:
      'CEL giving the new body: a string or bytes as they are, null keeps the body, anything else as JSON',
  }),
  metadata: z
    .record(z.string(), Cel)
    .optional()
    .meta({ description: 'values stored for later policies and CEL as metadata.<name>; evaluated first' }),
}).transform(dropNulls);
export type LocalTransform = z.output<typeof LocalTransform>;

const sides = {
  request: LocalTransform.nullable()
    .optional()
    .meta({ description: 'applied before the request is forwarded' }),
  response: LocalTransform.nullable()
    .optional()
    .meta({ description: 'applied before the response is returned' }),
};

/** One transformation: what it does to the request and to the response. */
const TransformationFields = strict(sides);
export const Transformations = TransformationFields.transform(dropNulls);
export type Transformations = z.output<typeof Transformations>;

/** A route, listener or gateway transformation: the plain form or the conditional one. */
export const TransformationsPolicy = explicitOrConditional(TransformationFields, dropNulls);
export type TransformationsPolicy = z.output<typeof TransformationsPolicy>;
