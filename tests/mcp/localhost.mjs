// SPDX-License-Identifier: Apache-2.0
// Preloaded (node --import) into npm MCP servers whose HTTP modes listen on every interface
// (server-everything calls app.listen(PORT) without a host): tests bind 127.0.0.1 only.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const numeric = typeof port === 'number' || (typeof port === 'string' && /^\d+$/.test(port));
  if (numeric && typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  if (port && typeof port === 'object' && !port.path && !port.host) args[0] = { ...port, host: '127.0.0.1' };
  return listen.apply(this, args);
};

// A test that dies before stopping its server (a crash, a failed assertion that exits) must not
// leave the server behind: when the parent is gone the server goes too.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 250).unref();
