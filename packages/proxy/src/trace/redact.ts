// Policy configs shown in diagnostics (trace effectivePolicy, /config_dump): plain JSON data, with
// credentials (Secrets in the IR) as "[redacted]" and the values that header modifiers give
// sensitive headers replaced: a header modifier or transformation that sets Authorization must not
// print the token.

const MODIFIERS = ['requestHeaderModifier', 'responseHeaderModifier'];

export function redactPolicies(policies: object, sensitive: ReadonlySet<string>): Record<string, unknown> {
  // Through JSON: Secret's toJSON prints "[redacted]", and the result survives a structured clone
  // (a Secret instance would arrive in the main thread as an empty object).
  const out = JSON.parse(JSON.stringify(policies)) as Record<string, unknown>;
  for (const m of MODIFIERS) {
    const mod = out[m] as { add?: Record<string, string>; set?: Record<string, string> } | undefined;
    if (!mod) continue;
    for (const map of [mod.add, mod.set]) {
      if (!map) continue;
      for (const k of Object.keys(map)) if (sensitive.has(k.toLowerCase())) map[k] = '<redacted>';
    }
  }
  // A transformation's expression for a sensitive header may hold the credential itself ('"Bearer …"').
  const t = out.transformations as TransformationsShown | undefined;
  for (const entry of t ? (t.conditional ?? [t]) : []) {
    for (const side of [entry.request, entry.response]) {
      for (const map of [side?.add, side?.set]) {
        if (!map) continue;
        for (const k of Object.keys(map)) if (sensitive.has(k.toLowerCase())) map[k] = '<redacted>';
      }
    }
  }
  return out;
}

type SideShown = { add?: Record<string, string>; set?: Record<string, string> } | undefined;
interface TransformationsShown {
  conditional?: { request?: SideShown; response?: SideShown }[];
  request?: SideShown;
  response?: SideShown;
}

const decodeName = (raw: string): string => {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '));
  } catch {
    return raw;
  }
};

/**
 * `path?query` with the values of the named query parameters replaced by `[redacted]` (a credential
 * sent as `?api_key=…`); everything else is kept byte for byte.
 */
export function redactQuery(pathAndQuery: string, names: ReadonlySet<string>): string {
  const q = pathAndQuery.indexOf('?');
  if (q < 0 || names.size === 0) return pathAndQuery;
  const parts = pathAndQuery.slice(q + 1).split('&');
  let changed = false;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string;
    const eq = part.indexOf('=');
    const raw = eq < 0 ? part : part.slice(0, eq);
    if (names.has(decodeName(raw))) {
      parts[i] = `${raw}=[redacted]`;
      changed = true;
    }
  }
  return changed ? `${pathAndQuery.slice(0, q + 1)}${parts.join('&')}` : pathAndQuery;
}
