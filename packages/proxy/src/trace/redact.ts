// Policy configs shown in diagnostics (trace effectivePolicy, /config_dump) with the values of
// sensitive headers replaced: a header modifier that sets Authorization must not print the token.

const MODIFIERS = ['requestHeaderModifier', 'responseHeaderModifier'];

export function redactPolicies<T extends Record<string, unknown>>(
  policies: T,
  sensitive: ReadonlySet<string>,
): T {
  let out: Record<string, unknown> | undefined;
  for (const m of MODIFIERS) {
    const mod = policies[m] as { add?: Record<string, string>; set?: Record<string, string> } | undefined;
    if (!mod) continue;
    const fix = (map: Record<string, string> | undefined) =>
      map &&
      Object.fromEntries(
        Object.entries(map).map(([k, v]) => [k, sensitive.has(k.toLowerCase()) ? '<redacted>' : v]),
      );
    out ??= { ...policies };
    out[m] = { ...mod, ...(mod.add ? { add: fix(mod.add) } : {}), ...(mod.set ? { set: fix(mod.set) } : {}) };
  }
  return (out ?? policies) as T;
}
