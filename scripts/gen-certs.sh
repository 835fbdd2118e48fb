#!/bin/sh
# gen-certs.sh DIR [SERVER_NAME...] -- make a private CA, a server certificate and
# a client certificate for gpupool in DIR (ca.pem, server.pem/.key, client.pem/.key).
# The server certificate names localhost, 127.0.0.1 and ::1 plus any SERVER_NAMEs
# (host names or IP addresses). The client certificate's CN is the tenant name,
# "$GPUPOOL_TENANT" or "default". For production use your own PKI.
set -eu
dir=${1:?usage: gen-certs.sh DIR [SERVER_NAME...]}
shift
tenant=${GPUPOOL_TENANT:-default}
mkdir -p "$dir"
cd "$dir"

san="DNS:localhost,IP:127.0.0.1,IP:::1"
for n in "$@"; do
	case "$n" in
	*[!0-9.:]*) san="$san,DNS:$n" ;;
	*) san="$san,IP:$n" ;;
	esac
done

umask 077
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
	-keyout ca.key -out ca.pem -subj "/CN=gpupool CA" \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
	2>/dev/null

issue() { # name subject extensions
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" \
		-out "$1.csr" -subj "$2" 2>/dev/null
	printf '%s\n' "$3" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 \
		-out "$1.pem" -extfile "$1.ext" 2>/dev/null
	rm -f "$1.csr" "$1.ext"
}
issue server "/CN=gpupoold" "subjectAltName=$san
extendedKeyUsage=serverAuth
keyUsage=critical,digitalSignature"
issue client "/CN=$tenant" "extendedKeyUsage=clientAuth
keyUsage=critical,digitalSignature"
chmod 644 ca.pem server.pem client.pem
echo "gen-certs: CA, server and client (tenant $tenant) certificates in $dir"
