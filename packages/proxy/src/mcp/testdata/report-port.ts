// Preloaded (node --import) into a server that listens on the port its PORT variable names but does
// not say which one it got: with PORT=0 the test learns the port from the line this prints.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
  this.once('listening', () => {
    const a = this.address();
    if (a && typeof a === 'object') process.stderr.write(`gw-test-listening ${a.port}\n`);
  });
  return (listen as (...a: unknown[]) => net.Server).apply(this, args);
} as typeof listen;
