// Preloaded into every test file's process by hack/test.ts. node's test runner waits without limit
// for a file's process to exit, so a server or timer a test leaves open would hang the whole run; and
// `--test-force-exit`, which would end it, cuts the file's report short (tests go uncounted). Instead,
// once a file's last test is over, a process still running thirty seconds later names what keeps it
// alive and fails. The time counts from this hook, which runs before the file's own `after` hooks
// (registered later): it covers their teardown too, which for the Kubernetes suites (a controller
// that drains for up to 10 s, an API server stopped within 5 s, gw processes) can itself take 20 s on
// a loaded machine.
import { after } from 'node:test';

const GRACE_MS = 30_000;

after(() => {
  setTimeout(() => {
    const open = process.getActiveResourcesInfo(); // ref'd handles only: not this timer

    process.stderr.write(
      `${process.argv[1] ?? 'this test file'}: the process is still running ${GRACE_MS / 1000} s after its last test; open: ${open.join(', ')}\n`,
    );
    process.exit(1);
  }, GRACE_MS).unref();
});
