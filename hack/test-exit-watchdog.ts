// Preloaded into every test file's process by hack/test.ts. node's test runner waits without limit
// for a file's process to exit, so a server or timer a test leaves open would hang the whole run; and
// `--test-force-exit`, which would end it, cuts the file's report short (tests go uncounted). Instead,
// once a file's last test is over, a process still running ten seconds later names what keeps it
// alive and fails.
import { after } from 'node:test';

const GRACE_MS = 10_000;

after(() => {
  setTimeout(() => {
    const open = process.getActiveResourcesInfo(); // ref'd handles only: not this timer

    process.stderr.write(
      `${process.argv[1] ?? 'this test file'}: the process is still running ${GRACE_MS / 1000} s after its last test; open: ${open.join(', ')}\n`,
    );
    process.exit(1);
  }, GRACE_MS).unref();
});
