#!/usr/bin/env python3
"""check-manifests.py GPUPOOLD -- checks that the Kubernetes examples hold together.

Every file parses as YAML and every object has apiVersion, kind and a name; the DaemonSet's
selector matches its pods' labels and the Service selects those pods; the Service is
headless and its ports name container ports; every volume mount names a volume and every
ConfigMap or Secret a volume uses is defined here (a Secret by a cert-manager Certificate);
the configuration in the ConfigMap passes `gpupoold -n`, its ports are the Service's and
its files lie under the mounts that carry them; the client pod preloads the interposer from
the volume its init container fills, and its GPUPOOL_SERVER names this Service's SRV
records. Exits 1 naming each problem.
"""
import os
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


def load():
    objs = []
    for f in sorted(os.listdir(HERE)):
        if not f.endswith(".yaml"):
            continue
        with open(os.path.join(HERE, f)) as fh:
            for doc in yaml.safe_load_all(fh):
                if doc is None:
                    continue
                name = doc.get("metadata", {}).get("name")
                check(doc.get("apiVersion") and doc.get("kind") and name,
                      f"{f}: an object without apiVersion, kind or metadata.name")
                doc["_file"] = f
                objs.append(doc)
    return objs


def one(objs, kind, name=None):
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    check(len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}")
    return found[0] if found else {}


def subset(a, b):
    return all(b.get(k) == v for k, v in (a or {}).items())


def volumes_hold(objs, spec, where):
    """Every mount names a volume; every ConfigMap/Secret volume exists here."""
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    secrets = {o["metadata"]["name"] for o in objs if o["kind"] == "Secret"}
    secrets |= {o["spec"]["secretName"] for o in objs if o["kind"] == "Certificate"}
    maps = {o["metadata"]["name"] for o in objs if o["kind"] == "ConfigMap"}
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        for m in c.get("volumeMounts", []):
            check(m["name"] in vols, f"{where}: container {c['name']} mounts unknown volume {m['name']}")
    for v in vols.values():
        if "secret" in v:
            check(v["secret"]["secretName"] in secrets, f"{where}: volume {v['name']}: no Secret {v['secret']['secretName']}")
        if "configMap" in v:
            check(v["configMap"]["name"] in maps, f"{where}: volume {v['name']}: no ConfigMap {v['configMap']['name']}")
    return vols


def mount_of(container, path):
    """The mount a path lies under (the longest), or None."""
    best = None
    for m in container.get("volumeMounts", []):
        mp = m["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best["mountPath"]):
                best = m
    return best


def main():
    gpupoold = sys.argv[1] if len(sys.argv) > 1 else None
    objs = load()
    ns = one(objs, "Namespace")["metadata"]["name"] if objs else ""
    for o in objs:
        if o["kind"] != "Namespace":
            check(o["metadata"].get("namespace") == ns, f"{o['_file']}: {o['kind']} {o['metadata']['name']} not in namespace {ns}")

    ds = one(objs, "DaemonSet")
    svc = one(objs, "Service")
    cm = one(objs, "ConfigMap")
    pod = one(objs, "Pod")
    tmpl = ds.get("spec", {}).get("template", {})
    labels = tmpl.get("metadata", {}).get("labels", {})
    check(subset(ds["spec"]["selector"]["matchLabels"], labels), "DaemonSet: its selector does not match its pods' labels")
    check(subset(svc["spec"]["selector"], labels), "Service: its selector does not select the DaemonSet's pods")
    check(svc["spec"].get("clusterIP") == "None", "Service: not headless (clusterIP: None): DNS would give one address")

    spec = tmpl["spec"]
    daemon = spec["containers"][0]
    cports = {p["name"]: p["containerPort"] for p in daemon.get("ports", [])}
    sports = {p["name"]: p for p in svc["spec"]["ports"]}
    for name, p in sports.items():
        check(p["targetPort"] in cports, f"Service port {name}: targetPort {p['targetPort']} is no container port")
        check(cports.get(p["targetPort"]) == p["port"], f"Service port {name}: {p['port']} is not the container's {cports.get(p['targetPort'])}")
    volumes_hold(objs, spec, "DaemonSet")

    # The configuration: valid for gpupoold, its ports the Service's, its files mounted.
    conf = cm["data"]["gpupoold.conf"]
    keys = {}
    for line in conf.splitlines():
        words = line.split("#")[0].split()
        if len(words) >= 2:
            keys.setdefault(words[0], words[1])
    check(keys.get("listen", "").endswith(":%d" % sports["gpupool"]["port"]), "gpupoold.conf: listen is not on the Service's gpupool port")
    check(keys.get("admin_listen", "").endswith(":%d" % sports["gpupool-admin"]["port"]), "gpupoold.conf: admin_listen is not on the Service's gpupool-admin port")
    check(sports["gpupool-admin"]["port"] == sports["gpupool"]["port"] + 1, "the admin port is not the session port + 1, where clients ask for quotes")
    check("-f" in daemon["command"] and mount_of(daemon, daemon["command"][daemon["command"].index("-f") + 1]),
          "DaemonSet: the configuration gpupoold reads is not mounted")
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    for k in ("tls_cert", "tls_key", "tls_ca", "admin_ca", "admin_socket", "accounting_file"):
        if k in keys:
            m = mount_of(daemon, keys[k])
            check(m is not None, f"gpupoold.conf: {k} {keys[k]} is under no mount")
            v = vols.get(m["name"]) if m else None
            if v and "secret" in v and "items" in v["secret"]:
                check(os.path.relpath(keys[k], m["mountPath"]) in [i["path"] for i in v["secret"]["items"]],
                      f"gpupoold.conf: {k} {keys[k]}: not among the items of Secret {v['secret']['secretName']}")
    if gpupoold:
        # gpupoold -n loads the certificates: the test's own stand in for the Secrets'.
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([os.path.join(HERE, "..", "..", "scripts", "gen-certs.sh"), tmp],
                           check=True, capture_output=True)
            local = conf
            for path, mine in ((keys.get("tls_cert"), "server.pem"), (keys.get("tls_key"), "server.key"),
                               (keys.get("tls_ca"), "ca.pem"), (keys.get("admin_ca"), "ca.pem"),
                               (keys.get("admin_socket"), "admin.sock"),
                               (keys.get("accounting_file"), "usage.jsonl")):
                if path:
                    local = local.replace(path, os.path.join(tmp, mine))
            with open(os.path.join(tmp, "gpupoold.conf"), "w") as f:
                f.write(local)
            r = subprocess.run([gpupoold, "-n", "-f", os.path.join(tmp, "gpupoold.conf")],
                               capture_output=True, text=True)
            check(r.returncode == 0, f"gpupoold -n rejects the ConfigMap's configuration: {r.stderr.strip()}")

    # The client: the interposer copied into a shared volume and preloaded from it.
    pspec = pod["spec"]
    pvols = volumes_hold(objs, pspec, "Pod")
    init = pspec["initContainers"][0]
    job = pspec["containers"][0]
    env = {e["name"]: e.get("value") for e in job.get("env", [])}
    dest = init["command"][-1]
    im = mount_of(init, dest)
    jm = mount_of(job, env.get("LD_PRELOAD", ""))
    check(im is not None and jm is not None and im["name"] == jm["name"], "Pod: LD_PRELOAD is not in the volume the init container fills")
    if im:
        check(os.path.relpath(dest, im["mountPath"]) == os.path.relpath(env["LD_PRELOAD"], jm["mountPath"]) if jm else False,
              "Pod: LD_PRELOAD is not the file the init container copies")
        check("emptyDir" in pvols.get(im["name"], {}), "Pod: the interposer's volume is not an emptyDir")
    want = f"srv:_gpupool._tcp.{svc['metadata']['name']}.{ns}.svc.cluster.local"
    check(env.get("GPUPOOL_SERVER") == want, f"Pod: GPUPOOL_SERVER is not {want}")
    for k in ("GPUPOOL_CA", "GPUPOOL_CERT", "GPUPOOL_KEY"):
        check(env.get(k) and mount_of(job, env[k]), f"Pod: {k} is under no mount")
    # The daemons' certificate names what clients check: the Service and its pods' names.
    server = [o for o in objs if o["kind"] == "Certificate" and o["spec"].get("secretName") == vols.get("tls", {}).get("secret", {}).get("secretName")]
    check(len(server) == 1, "no Certificate for the daemons' Secret")
    if server:
        names = server[0]["spec"].get("dnsNames", [])
        base = f"{svc['metadata']['name']}.{ns}.svc.cluster.local"
        check(base in names and "*." + base in names, f"the daemons' certificate should name {base} and *.{base}")

    for p in problems:
        print("check-manifests: " + p, file=sys.stderr)
    if problems:
        return 1
    print(f"check-manifests: {sum(1 for _ in objs)} objects hold together")
    return 0


if __name__ == "__main__":
    sys.exit(main())
