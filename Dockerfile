# memledger: one image for the API, the build workers and the scheduler.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY ledger ledger
COPY observations observations
COPY materializers materializers
COPY retrieval retrieval
COPY consolidation consolidation
COPY ops ops
COPY memledger memledger
RUN pip install --no-cache-dir .
ENV MEMLEDGER_HOME=/var/lib/memledger
EXPOSE 8080
CMD ["memledger", "serve", "--host", "0.0.0.0", "--port", "8080", "--no-workers"]
