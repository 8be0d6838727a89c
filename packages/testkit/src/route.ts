// A one-route proxy config (YAML) in front of an upstream, with the given policies.
export function oneRoute(upstreamPort: number, policiesYaml: string, extra = ''): string {
  const indented = policiesYaml
    .trim()
    .split('\n')
    .map((l) => `        ${l}`)
    .join('\n');
  return `${extra}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - name: test
    routes:
    - name: r
      policies:
${indented}
      backends: [{host: "127.0.0.1:${upstreamPort}"}]
`;
}
