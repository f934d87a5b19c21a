// Preloaded (node --require) into the npm reference servers the tests run:
// a server that listens on a port binds 127.0.0.1 only, on a free port of
// the system's choosing, and reports it on stderr as
// "listening on 127.0.0.1:<port>".
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    const rest = args.slice(1).filter((a) => typeof a !== "string"); // a host given is replaced
    this.once("listening", () => {
      process.stderr.write(`listening on 127.0.0.1:${this.address().port}\n`);
    });
    return listen.call(this, 0, "127.0.0.1", ...rest);
  }
  return listen.apply(this, args);
};
