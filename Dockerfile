FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    STATIC_ROOT=/app/staticfiles
WORKDIR /app
COPY pyproject.toml README.md ./
COPY annotator annotator
COPY pipeline pipeline
RUN pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu -e .
COPY . .
RUN DEBUG=1 python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "annotator.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120"]
