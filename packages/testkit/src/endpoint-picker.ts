// An endpoint picker (EPP) as the Gateway API Inference Extension's endpoint picker protocol has one
// answer, on the real ext_proc v3 gRPC server of ext-proc-server.ts. It is a protocol-level stand-in,
// not the reference EPP (a Go program that watches the cluster and scrapes model servers' metrics):
// the test chooses the endpoint (it is told the subset hint the gateway sent). As the reference EPP does in FULL_DUPLEX_STREAMED mode, it holds the
// request headers' answer until it has the whole body, then answers the headers with the chosen
// endpoint in x-gateway-destination-endpoint (and in the dynamic metadata envoy.lb), and streams the
// body back unchanged; it marks the response headers (x-went-into-resp-headers) and streams the
// response body back as it comes. A choice may instead be an immediate response (503 with no ready
// endpoint, 429 to shed the request).
import type { ProcessingRequest } from '@gw/xds-proto/envoy/service/ext_proc/v3/external_processor';
import {
  type ExtProcServer,
  type ProcessingAnswer,
  setHeaderAnswer,
  startExtProcServer,
} from './ext-proc-server.ts';

/** What the picker is asked about: the request's headers and, parsed, its body. */
export interface PickRequest {
  headers: Record<string, string>;
  /** The body parsed as JSON (undefined: none, or not JSON). */
  json: Record<string, unknown> | undefined;
  /** The endpoints the gateway said it may choose from (the subset hint), if it said. */
  subset: string[] | undefined;
}

/** The chosen endpoint(s) as the header carries them (ip:port, or several comma-separated), none, or a refusal. */
export type PickAnswer = string | undefined | { status: number; body?: string };

export interface EndpointPicker extends ExtProcServer {
  /** What each request looked like to the picker, oldest first. */
  asked: PickRequest[];
}

export const DESTINATION_HEADER = 'x-gateway-destination-endpoint';

const headersOf = (r: ProcessingRequest): Record<string, string> => {
  const out: Record<string, string> = {};
  if (r.request.case !== 'requestHeaders' && r.request.case !== 'responseHeaders') return out;
  for (const h of r.request.value.headers?.headers ?? [])
    out[h.key] = h.rawValue.length > 0 ? Buffer.from(h.rawValue).toString('latin1') : h.value;
  return out;
};

const streamed = (phase: 'requestBody' | 'responseBody', body: Uint8Array, endOfStream: boolean) =>
  ({
    response: {
      case: phase,
      value: {
        response: { bodyMutation: { mutation: { case: 'streamedResponse', value: { body, endOfStream } } } },
      },
    },
  }) satisfies ProcessingAnswer;

/** `port`: on 127.0.0.1 (default 0: any free one). */
export async function startEndpointPicker(
  choose: (r: PickRequest) => PickAnswer | Promise<PickAnswer>,
  port = 0,
): Promise<EndpointPicker> {
  const asked: PickRequest[] = [];
  /** The answer to the request headers once the picker has chosen. */
  const decide = async (first: ProcessingRequest, body: Buffer | undefined): Promise<ProcessingAnswer[]> => {
    const headers = headersOf(first);
    let json: Record<string, unknown> | undefined;
    try {
      const v = body && body.length > 0 ? (JSON.parse(body.toString('utf8')) as unknown) : undefined;
      if (v && typeof v === 'object' && !Array.isArray(v)) json = v as Record<string, unknown>;
    } catch {}
    const hint =
      first.metadataContext?.filterMetadata['envoy.lb.subset_hint']?.[
        'x-gateway-destination-endpoint-subset'
      ];
    const subset = Array.isArray(hint) ? hint.map(String) : undefined;
    const r: PickRequest = { headers, json, subset };
    asked.push(r);
    const pick = await choose(r);
    if (typeof pick === 'object')
      return [
        {
          response: {
            case: 'immediateResponse',
            value: { status: { code: pick.status }, body: Buffer.from(pick.body ?? '') },
          },
        },
      ];
    const out: ProcessingAnswer[] = [
      {
        response: {
          case: 'requestHeaders',
          value: {
            response: {
              clearRouteCache: true,
              headerMutation: {
                setHeaders:
                  pick === undefined
                    ? []
                    : [{ header: { key: DESTINATION_HEADER, rawValue: Buffer.from(pick) } }],
              },
            },
          },
        },
        ...(pick === undefined ? {} : { dynamicMetadata: { 'envoy.lb': { [DESTINATION_HEADER]: pick } } }),
      },
    ];
    if (body !== undefined) out.push(streamed('requestBody', body, true));
    return out;
  };
  const server = await startExtProcServer(
    async (req, earlier) => {
      const r = req.request;
      switch (r.case) {
        case 'requestHeaders':
          // no body: choose now; else wait for the whole body
          return r.value.endOfStream ? decide(req, undefined) : undefined;
        case 'requestBody': {
          if (!r.value.endOfStream) return undefined;
          const chunks = [...earlier, req].flatMap((x) =>
            x.request.case === 'requestBody' ? [Buffer.from(x.request.value.body)] : [],
          );
          return decide(earlier[0] as ProcessingRequest, Buffer.concat(chunks));
        }
        case 'responseHeaders':
          return setHeaderAnswer('responseHeaders', 'x-went-into-resp-headers', 'true');
        case 'responseBody':
          return streamed('responseBody', r.value.body, r.value.endOfStream);
        default:
          return undefined;
      }
    },
    undefined,
    port,
  );
  return Object.assign(server, { asked });
}
