# One image holding both binaries, built from scratch: no base image is
# pulled (this machine has no registry). Build the static binaries first:
#
#   mkdir -p bin && CGO_ENABLED=0 go build -trimpath -o bin/ ./cmd/analyzer ./cmd/shipper
#   docker build -t faultline:dev .
#
# Then `docker compose up` (see docker-compose.yml), or try the demo:
#
#   docker run --rm -p 127.0.0.1:8080:8080 faultline:dev serve --demo --http 0.0.0.0:8080
FROM scratch
COPY bin/analyzer bin/shipper /usr/local/bin/
# scratch has no /tmp, which serve --demo (and os.TempDir) needs: WORKDIR
# creates the directory.
WORKDIR /tmp
# Default data dir of serve; compose mounts a volume here.
WORKDIR /data
EXPOSE 8080 4222
ENTRYPOINT ["/usr/local/bin/analyzer"]
CMD ["serve", "--data-dir", "/data", "--http", "0.0.0.0:8080", "--nats-listen", "0.0.0.0:4222"]
