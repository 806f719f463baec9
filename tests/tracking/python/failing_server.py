"""A tiny HTTP server that answers every request with HTTP 500 and an MLflow-style JSON error,
for tests/tracking/mlflow_tracking_test.cpp (a tracking server that refuses).

Usage: failing_server.py PORT
"""
import http.server
import json
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = json.dumps({"error_code": "INTERNAL_ERROR", "message": "the database is locked (test server)"}).encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = answer

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print("ready", flush=True)
    server.serve_forever()
