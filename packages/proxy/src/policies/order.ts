// The order in which route policies run, outermost first. A policy earlier in the list sees the
// request before, and the response after, every policy below it. This is the only place it is set.
import type { BackendPolicyName, PolicyName } from './types.ts';

export const POLICY_ORDER = [
  // Outermost, so the deadline covers everything below, including delays, retries and buffering.
  'timeout',
  // Who may connect at all, by address: before anything else is done for the request.
  'ipAccessControl',
  // Before authentication: a browser preflight carries no credentials and must not be rejected.
  'cors',
  // MCP clients discover how to authenticate (protected resource and authorization server metadata,
  // client registration) without credentials, so those answers come before any authentication; the
  // token check that follows fills jwt.* as jwtAuth does.
  'mcpAuthentication',
  // Who is calling: authentication before anything that depends on the caller. JWT first, as the
  // most common; each one only fills in its own identity (jwt.*, apiKey.*).
  'jwtAuth',
  // Browser login (the spec's slot order: jwt, oidc, basicAuth). It answers its callback and logout
  // paths itself and sends a browser without a session to the provider; a session's claims are jwt.*.
  'oidc',
  'basicAuth',
  'apiKey',
  // Everything above runs on an LLM route before the ai backend reads the request body
  // (routing/table.ts beforeTheBody): none of it may read the body or llm.*, other than through a
  // credential location's CEL expression, which moves it below the read.
  // After authentication, so the check can see jwt.* (requestMetadata); before authorization, so
  // rules can use the extauthz.* metadata the service returned.
  'extAuthz',
  // Whether they may: after authentication, so rules can use jwt.*, apiKey.* and extauthz.*.
  'authorization',
  // How often: only requests that are allowed count against a limit.
  'localRateLimit',
  // After the local limit, so a local 429 saves the round trip and does not count globally.
  'remoteRateLimit',
  // How many at once: after the rate limits, so a request they refuse never holds a slot. The slot is
  // held until the response has been sent.
  'concurrencyLimit',
  // After admission control, so a rejected or rate-limited request never costs a body read.
  'buffer',
  // After admission control and buffering: the service sees only admitted requests, and a body the
  // buffer policy already holds. Above the header modifiers, redirects and direct responses, so its
  // response phases see what those produce.
  'extProc',
  // After admission control and ext_proc (the spec's order), so a refused request is never
  // transformed and its body never read for it, and expressions see jwt.*, apiKey.*, extauthz.* and
  // what ext_proc changed. Above CSRF, the header modifiers, URL rewrite, redirect and direct response:
  // those see the transformed request, and on the way out the response transformation sees (and may
  // rewrite) what they answered.
  'transformations',
  // After authentication: a CSRF check on an unauthenticated request would only hide the 401.
  'csrf',
  // Header and URL changes before redirect/direct response, so those see the rewritten request.
  'requestHeaderModifier',
  // Wraps everything below on the way out, so it also edits redirects and direct responses.
  'responseHeaderModifier',
  'urlRewrite',
  // A redirect ends the request here: nothing below runs.
  'requestRedirect',
  // Fault injection just before the answer is produced, counted against the request timeout.
  'delay',
  // A direct response also ends the request; it comes after delay so injected latency applies.
  'directResponse',
  // Only requests that go to a backend are copied, as the policies above left them; outside retry,
  // so a retried request is mirrored once.
  'requestMirror',
  // Innermost: each retry replays only the backend call, not the policies above.
  'retry',
  // Never a route layer (the loader hands a route's backendAuth to its backends); listed for the type.
  'backendAuth',
] as const satisfies readonly PolicyName[];

// A policy missing from the order is a type error here.
type Missing = Exclude<PolicyName, (typeof POLICY_ORDER)[number]>;
const _everyPolicyIsOrdered: [Missing] extends [never] ? true : Missing = true;
void _everyPolicyIsOrdered;

// The order of a backend's own policies (set on the backend, after it was chosen), outermost first.
// They run inside the route's chain, so they see the request as the route's policies left it.
export const BACKEND_ORDER = [
  // Authentication first (deprecated place: the route's mcpAuthentication runs before the route's
  // other policies, this one only after them).
  'mcpAuthentication',
  // The backend's own authorization (agentgateway's backend authorization and extAuthz), on the
  // request as the route's policies left it: the external check first, as on a route, then the rules
  // (which may read what the check added).
  'extAuthz',
  'authorization',
  // A redirect answers without calling the backend, so nothing below matters for it.
  'requestRedirect',
  // Header changes last before the call; the response modifier wraps the call on the way out.
  'requestHeaderModifier',
  'responseHeaderModifier',
  // The backend's own transformation after the route's policies, on the request as they left it;
  // above backendAuth, so a signature covers what it changed (and the credential is not rewritten
  // by it), and on the way out it sees the backend's answer before the route's policies do.
  'transformations',
  // The credential last, on the request as it will be sent (a signature covers the headers and
  // body); inside the route's retry, so each attempt gets a fresh token.
  'backendAuth',
] as const satisfies readonly BackendPolicyName[];

type MissingBackend = Exclude<BackendPolicyName, (typeof BACKEND_ORDER)[number]>;
const _everyBackendPolicyIsOrdered: [MissingBackend] extends [never] ? true : MissingBackend = true;
void _everyBackendPolicyIsOrdered;
