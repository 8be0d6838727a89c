// An OpenAPI 3 document as MCP tools (agentgateway's `openapi` target): one tool per path and
// method, named by its operationId, whose input is `{path, query, header, body}` — each parameter
// group an object of the operation's parameters, `body` the JSON request body's schema. Schemas the
// document keeps under #/components/schemas travel with the tool as `$defs`, so each inputSchema is
// whole on its own. Everything here runs when the config loads; a document gw cannot turn into tools
// is a config error naming the operation.
import type { OpenApiToolIR } from '../config/ir.ts';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The HTTP methods an OpenAPI path item may hold, in the order tools are listed. */
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const GROUPS = ['path', 'query', 'header'] as const;
type Group = (typeof GROUPS)[number];
/** MCP titles are short; a summary longer than this is cut. */
const MAX_TITLE = 64;

/** A document gw cannot turn into tools; `at` is where in the document (`paths./pets.get`). */
export class OpenApiError extends Error {
  readonly at: string;
  constructor(at: string, message: string) {
    super(at ? `${at}: ${message}` : message);
    this.at = at;
  }
}

export interface OpenApiTools {
  tools: OpenApiToolIR[];
  /** The path of the document's one server URL (`/api/v1`), '' without one. */
  serverPath: string;
}

/** `base`: where the document was fetched from, against which a relative server URL is read. */
export function openApiTools(doc: unknown, base = 'http://gw.invalid/'): OpenApiTools {
  if (!isObject(doc)) throw new OpenApiError('', 'the document is not an object');
  const version = doc.openapi;
  if (typeof version !== 'string' || !version.startsWith('3.'))
    throw new OpenApiError(
      'openapi',
      `an OpenAPI 3 document is needed (openapi: 3.x)${typeof doc.swagger === 'string' ? '; Swagger 2.0 is not read' : ''}`,
    );
  const refs = new Refs(doc);
  const tools: OpenApiToolIR[] = [];
  const names = new Map<string, string>();
  const paths = isObject(doc.paths) ? doc.paths : {};
  for (const [path, rawItem] of Object.entries(paths)) {
    const where = `paths.${path}`;
    if (!isObject(rawItem)) continue;
    if (typeof rawItem.$ref === 'string')
      throw new OpenApiError(where, 'a path item given by $ref is not read');
    for (const method of METHODS) {
      const op = rawItem[method];
      if (!isObject(op)) continue;
      const at = `${where}.${method}`;
      // read for each operation: the schemas they refer to go into each tool's own $defs
      const shared = parameters(rawItem.parameters, refs, where, true);
      const name = op.operationId;
      if (typeof name !== 'string' || name === '')
        throw new OpenApiError(at, 'every operation needs an operationId: it is the tool name');
      const earlier = names.get(name);
      if (earlier !== undefined) throw new OpenApiError(at, `operationId ${name} is also ${earlier}'s`);
      names.set(name, at);
      const own = parameters(op.parameters, refs, at, false);
      // the operation's own parameters win over the path's (by name and location)
      const merged = new Map(shared);
      for (const [k, v] of own) merged.set(k, v);
      tools.push(tool(name, method, path, op, [...merged.values()], refs, at));
    }
  }
  return { tools, serverPath: serverPath(doc.servers, base) };
}

interface Param {
  name: string;
  in: Group;
  required: boolean;
  schema: Json;
}

function parameters(list: unknown, refs: Refs, at: string, pathLevel: boolean): Map<string, Param> {
  const out = new Map<string, Param>();
  if (!Array.isArray(list)) return out;
  list.forEach((raw, i) => {
    const pat = `${at}.parameters[${i}]`;
    const p = refs.resolve(raw, '#/components/parameters/', pat);
    const where = p.in;
    if (where === 'cookie') {
      if (pathLevel) return; // as agentgateway: a path's cookie parameter is left out
      throw new OpenApiError(pat, 'cookie parameters are not sent by the gateway');
    }
    if (where !== 'path' && where !== 'query' && where !== 'header')
      throw new OpenApiError(
        pat,
        `parameter location ${JSON.stringify(where)} is not one of path, query, header`,
      );
    if (typeof p.name !== 'string' || p.name === '') throw new OpenApiError(pat, 'a parameter needs a name');
    if (!isObject(p.schema)) throw new OpenApiError(pat, 'a parameter needs a schema (content is not read)');
    const schema = refs.bundle(p.schema, `${pat}.schema`);
    if (typeof p.description === 'string' && schema.description === undefined)
      schema.description = p.description;
    const name = where === 'header' ? p.name.toLowerCase() : p.name;
    out.set(`${where}:${name}`, {
      name: p.name,
      in: where,
      // a path parameter is always needed to build the URL
      required: where === 'path' || p.required === true,
      schema,
    });
  });
  return out;
}

function tool(
  name: string,
  method: string,
  path: string,
  op: Json,
  params: Param[],
  refs: Refs,
  at: string,
): OpenApiToolIR {
  const properties: Json = {};
  const required: string[] = [];
  const names: Record<Group, string[]> = { path: [], query: [], header: [] };
  for (const g of GROUPS) {
    const mine = params.filter((p) => p.in === g);
    if (mine.length === 0) continue;
    names[g] = mine.map((p) => p.name);
    const need = mine.filter((p) => p.required).map((p) => p.name);
    properties[g] = {
      type: 'object',
      properties: Object.fromEntries(mine.map((p) => [p.name, p.schema])),
      ...(need.length > 0 ? { required: need } : {}),
    };
    if (need.length > 0) required.push(g);
  }
  let body: OpenApiToolIR['body'];
  if (op.requestBody !== undefined) {
    const rb = refs.resolve(op.requestBody, '#/components/requestBodies/', `${at}.requestBody`);
    const content = isObject(rb.content) ? rb.content : {};
    const json = content['application/json'];
    if (isObject(json)) {
      if (!isObject(json.schema))
        throw new OpenApiError(`${at}.requestBody`, 'an application/json body needs a schema');
      properties.body = refs.bundle(json.schema, `${at}.requestBody.content.application/json.schema`);
      body = 'json';
    } else if (isObject(content['application/octet-stream'])) {
      properties.body = { type: 'string', format: 'byte', description: 'Base64-encoded binary content' };
      body = 'binary';
    }
    if (body && rb.required === true) required.push('body');
  }
  const inputSchema: Json = { type: 'object', properties, ...(required.length > 0 ? { required } : {}) };
  const defs = refs.takeDefs();
  if (Object.keys(defs).length > 0) inputSchema.$defs = defs;
  const summary = typeof op.summary === 'string' && op.summary !== '' ? op.summary : undefined;
  const description = typeof op.description === 'string' && op.description !== '' ? op.description : summary;
  return {
    name,
    description: description ?? name,
    ...(summary ? { title: summary.length > MAX_TITLE ? summary.slice(0, MAX_TITLE) : summary } : {}),
    inputSchema,
    method: method.toUpperCase(),
    path,
    params: names,
    ...(body ? { body } : {}),
  };
}

/** The path part of the one server URL (`https://api.example.com/v1` → `/v1`); more than one is an error. */
function serverPath(servers: unknown, base: string): string {
  if (!Array.isArray(servers) || servers.length === 0) return '';
  if (servers.length > 1)
    throw new OpenApiError('servers', 'more than one server: the target says where the API is');
  const server = isObject(servers[0]) ? servers[0] : {};
  if (typeof server.url !== 'string') return '';
  // server variables take their defaults: `/api/{version}` with version's default v2 is /api/v2
  const vars = isObject(server.variables) ? server.variables : {};
  const url = server.url.replace(/\{([^}]*)\}/g, (whole, name: string) => {
    const v = vars[name];
    const d = isObject(v) ? v.default : undefined;
    if (typeof d !== 'string' && typeof d !== 'number')
      throw new OpenApiError('servers[0].url', `the variable ${whole} has no default`);
    return String(d);
  });
  let p: string;
  try {
    p = new URL(url, base).pathname;
  } catch {
    throw new OpenApiError('servers[0].url', `${JSON.stringify(url)} is not a URL`);
  }
  return p.replace(/\/+$/, '');
}

/**
 * References within the document. Parameters and request bodies are taken whole; a schema's
 * `#/components/schemas/X` becomes `#/$defs/X`, X (and what it refers to) copied into the tool's
 * `$defs` once.
 */
class Refs {
  readonly #doc: Json;
  #defs: Json = {};

  constructor(doc: Json) {
    this.#doc = doc;
  }

  /** `v` itself, or the component its $ref names (which must be under `prefix`). */
  resolve(v: unknown, prefix: string, at: string): Json {
    let cur = v;
    for (let hops = 0; isObject(cur) && typeof cur.$ref === 'string'; hops++) {
      const ref = cur.$ref;
      if (hops > 16) throw new OpenApiError(at, `$ref ${ref} goes round in a circle`);
      if (!ref.startsWith(prefix)) throw new OpenApiError(at, `$ref ${ref} should be under ${prefix}`);
      cur = this.#target(ref, at);
    }
    if (!isObject(cur)) throw new OpenApiError(at, 'expected an object');
    return cur;
  }

  /** A copy of a schema whose component references point into $defs, the components copied there. */
  bundle(schema: Json, at: string): Json {
    return this.#rewrite(schema, at) as Json;
  }

  /** The $defs gathered since the last call (one tool's). */
  takeDefs(): Json {
    const d = this.#defs;
    this.#defs = {};
    return d;
  }

  #rewrite(v: unknown, at: string): unknown {
    if (Array.isArray(v)) return v.map((x) => this.#rewrite(x, at));
    if (!isObject(v)) return v;
    const out: Json = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string') {
        const prefix = '#/components/schemas/';
        if (!x.startsWith(prefix))
          throw new OpenApiError(at, `$ref ${x}: a schema may refer only to #/components/schemas/`);
        const name = x.slice(prefix.length);
        out.$ref = `#/$defs/${name}`;
        if (!(name in this.#defs)) {
          this.#defs[name] = true; // placed first: a schema that refers to itself stops here
          this.#defs[name] = this.#rewrite(this.#target(x, at), at);
        }
        continue;
      }
      out[k] = this.#rewrite(x, at);
    }
    return out;
  }

  #target(ref: string, at: string): unknown {
    if (!ref.startsWith('#/'))
      throw new OpenApiError(at, `$ref ${ref}: only references within the document are read`);
    let cur: unknown = this.#doc;
    for (const raw of ref.slice(2).split('/')) {
      const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
      if (!isObject(cur) || !(key in cur))
        throw new OpenApiError(at, `$ref ${ref} names nothing in the document`);
      cur = cur[key];
    }
    return cur;
  }
}
