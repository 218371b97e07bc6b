# The app for docker-compose.yml: gunicorn serving Django, static files through WhiteNoise;
# the same image runs the background worker.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .
# collectstatic needs settings to load, not a real secret or database.
RUN SECRET_KEY=collectstatic-only DATABASE_URL=sqlite:////tmp/build.sqlite3 \
    python manage.py collectstatic --noinput

RUN useradd --create-home claimdesk && mkdir -p /app/var && chown claimdesk /app/var
USER claimdesk
EXPOSE 8000
# gunicorn's sync workers are killed after --timeout seconds of silence. Imports and large gold
# exports run in the `worker` service (manage.py worker), not in requests; what a request still
# does at the upload limit is receive the file (CLAIMDESK_MAX_UPLOAD_MB, 100 MB by default) and
# store it. 300 s leaves room for that on a slow link. A reverse proxy in front needs the same
# two numbers (e.g. nginx client_max_body_size 101m, proxy_read_timeout 300s).
# --limit-request-line/-fields keep gunicorn's defaults: uploads travel in the body.
# The same image runs the worker: `python manage.py worker` (docker-compose.yml does).
CMD ["sh", "-c", "python manage.py migrate --noinput && exec gunicorn config.wsgi --bind 0.0.0.0:8000 --workers ${WEB_CONCURRENCY:-3} --timeout ${WEB_TIMEOUT:-300} --graceful-timeout 30 --access-logfile -"]
