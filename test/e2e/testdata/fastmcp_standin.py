#!/usr/bin/env python3
"""A stand-in for a server built on the Python SDK's FastMCP, for the
gateway's resource-URI tests (PyPI is out of reach here: standard library
only). An MCP server on stdio (one JSON-RPC message a line) that lists the
resources notes://secret and notes://public and the template
users://{id}/profile, and resolves a URI the way such a server does:

- the URI first goes through a URL parser, as FastMCP's AnyUrl does: the
  scheme is lower-cased and dot segments are removed ("%2E" counting as
  ".");
- a listed resource is found by that URL; like servers that compare URIs
  leniently it also takes the URL with its query, fragment and trailing
  slashes cut off and its percent-encoded unreserved characters decoded;
- a template is matched as FastMCP matches it: the query is split off at
  the first "?", the path's leading and trailing slashes are stripped, and
  each {name} takes any run of characters but "/" ({name:path} anything).

It is written from a reading of FastMCP's behaviour, not from its code.
"""

import json
import re
import sys

RESOURCES = {
    "notes://secret": "the secret note",
    "notes://public": "the public note",
}
TEMPLATES = {"users://{id}/profile": "Profile of {id}"}
NAMES = ["alice", "bob", "carol"]
UNRESERVED = re.compile(r"%([0-9A-Fa-f]{2})")


def url_parse(uri):
    """The URL a parser makes of a URI: scheme lower-cased, dot segments gone."""
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):(//[^/?#]*)?([^?#]*)(.*)$", uri, re.S)
    if not m:
        return uri
    scheme, authority, path, rest = m.group(1).lower(), m.group(2) or "", m.group(3), m.group(4)
    out = []
    segs = path.split("/")
    for i, seg in enumerate(segs):
        if seg.lower() in (".", "%2e"):
            if i == len(segs) - 1:
                out.append("")
            continue
        if seg.lower() in ("..", "%2e%2e", ".%2e", "%2e."):
            if len(out) > 1:
                out.pop()
            if i == len(segs) - 1:
                out.append("")
            continue
        out.append(seg)
    return scheme + ":" + authority + "/".join(out) + rest


def lenient_key(uri):
    uri = re.split(r"[?#]", uri, maxsplit=1)[0]

    def dec(m):
        c = chr(int(m.group(1), 16))
        return c if re.match(r"[A-Za-z0-9._~-]", c) else m.group(0)

    return UNRESERVED.sub(dec, uri).rstrip("/")


def template_regex(template):
    path = re.sub(r"\{\?.*?\}", "", template)
    parts = []
    for part in path.strip("/").split("/"):
        m = re.fullmatch(r"\{(\w+)(?::(\w+))?\}", part)
        if m:
            parts.append("(?P<%s>%s)" % (m.group(1), ".*" if m.group(2) == "path" else "[^/]+"))
        else:
            parts.append(re.escape(part))
    return re.compile("^" + "/".join(parts) + "$")


def match_template(uri):
    path = uri.split("?", 1)[0]
    for template, text in TEMPLATES.items():
        m = template_regex(template).match(path.strip("/"))
        if m:
            return template, m.groupdict()
    return None, None


def read(uri):
    url = url_parse(uri)
    if url in RESOURCES:
        return RESOURCES[url]
    for listed, text in RESOURCES.items():
        if lenient_key(url) == lenient_key(listed):
            return text
    template, params = match_template(url)
    if template:
        return TEMPLATES[template].format(**params)
    return None


def handle(method, params):
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"resources": {"subscribe": True, "listChanged": False}, "completions": {}},
            "serverInfo": {"name": "fastmcp-standin", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "resources/list":
        return {"resources": [{"uri": u, "name": u.split("://")[1], "mimeType": "text/plain"} for u in RESOURCES]}
    if method == "resources/templates/list":
        return {"resourceTemplates": [{"uriTemplate": t, "name": "profile", "mimeType": "text/plain"} for t in TEMPLATES]}
    if method == "resources/read":
        uri = params.get("uri", "")
        text = read(uri)
        if text is None:
            raise LookupError("Unknown resource: " + uri)
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}
    if method in ("resources/subscribe", "resources/unsubscribe"):
        if read(params.get("uri", "")) is None:
            raise LookupError("Unknown resource: " + params.get("uri", ""))
        return {}
    if method == "completion/complete":
        ref = params.get("ref", {})
        value = params.get("argument", {}).get("value", "")
        values = []
        # A reference to the template is read like a URI of it.
        if ref.get("type") == "ref/resource" and match_template(url_parse(ref.get("uri", "")))[0]:
            values = [n for n in NAMES if n.startswith(value)]
        return {"completion": {"values": values, "hasMore": False}}
    raise NotImplementedError("Method not found: " + method)


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue  # a notification or a response: nothing to answer
        try:
            out = {"jsonrpc": "2.0", "id": msg["id"], "result": handle(msg["method"], msg.get("params") or {})}
        except NotImplementedError as e:
            out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": str(e)}}
        except Exception as e:  # noqa: BLE001 - every failure is the client's answer
            out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": str(e)}}
        sys.stdout.write(json.dumps(out, separators=(",", ":")) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
