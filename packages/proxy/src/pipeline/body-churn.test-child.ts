// body-churn.test.ts's data plane: one bind on port 0 routing to UPSTREAM_PORT, in a process of its
// own. Sends {port} once listening; on 'report', the scavenges bodyChurned ran and the largest
// array-buffer total seen (sampled every 2 ms).
import { startProxy } from '@gw/testkit/proxy';
import { churnCollections } from './body-churn.ts';

const proxy = await startProxy(`binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - host: 127.0.0.1:${process.env.UPSTREAM_PORT}
`);
let peakArrayBuffers = 0;
setInterval(() => {
  peakArrayBuffers = Math.max(peakArrayBuffers, process.memoryUsage().arrayBuffers);
}, 2).unref();
process.on('message', () => {
  process.send?.({ collections: churnCollections(), peakArrayBuffers });
});
process.send?.({ port: proxy.port() });
