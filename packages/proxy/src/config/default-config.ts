// The config `gw` runs when started without -f: one listener on localhost answering an example route,
// so `make run` shows a working gateway with nothing else installed.
export const DEFAULT_CONFIG_NAME = '<embedded default config>';

export const DEFAULT_CONFIG = `# yaml-language-server: $schema=../../../../schema/config.json
config:
  adminAddr: 127.0.0.1:15000
binds:
- port: \${GW_PORT:-3000}
  address: 127.0.0.1
  listeners:
  - name: default
    protocol: HTTP
    routes:
    - name: hello
      matches:
      - path: { exact: / }
      policies:
        responseHeaderModifier:
          set: { content-type: text/plain; charset=utf-8 }
        directResponse:
          status: 200
          body: |
            Hello from gw. This answer comes from the embedded default config.
            Run your own with: bin/gw -f examples/basic.yaml
            Admin interface: http://127.0.0.1:15000/
    - name: health
      matches:
      - path: { exact: /healthz }
      policies:
        directResponse: { status: 200, body: "ok\\n" }
`;
