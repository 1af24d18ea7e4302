# flowserve model server image.
#
#   CPU (default):  docker build -t flowserve .
#   GPU (CUDA 12):  docker build -t flowserve:gpu \
#                     --build-arg BASE_IMAGE=nvidia/cuda:12.6.3-runtime-ubuntu24.04 \
#                     --build-arg EXTRAS=fast,image,tflite,gpu .
#   run:            docker run -p 8501:8501 -p 8500:8500 [-v /path/to/repository:/models:ro] flowserve
#                   docker run --gpus all -p 8501:8501 -e FLOWSERVE_DEVICE=gpu:0 flowserve:gpu
#
# BASE_IMAGE may be any Debian/Ubuntu image; when it has no python3 (the CUDA images), the
# distribution's python3 is installed, which must be >= 3.11 (Ubuntu 24.04 has 3.12; Ubuntu
# 22.04's is 3.10, too old). Only runtime dependencies are installed (not the test extra).

ARG BASE_IMAGE=python:3.11-slim

# --- stage 1: build the flowserve wheel (pure Python, so one wheel fits every base) -------
FROM python:3.11-slim AS wheel
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md ./
COPY engine ./engine
COPY service ./service
# The wheel ships the bundled models' artifacts (service/bundled_models), as on PyPI.
COPY models ./models
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# --- stage 2: the runtime image ---------------------------------------------------------
FROM ${BASE_IMAGE}
# Extras of the flowserve package to install: "fast" (uvloop, pysimdjson), "image" (Pillow, for
# models that decode images), "tflite" (tflite, flatbuffers: pure-Python readers of .tflite
# models, as TF Serving serves them), "gpu" (cupy-cuda12x): "fast,image,tflite" on CPU,
# "fast,image,tflite,gpu".
ARG EXTRAS="fast,image,tflite"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/flowserve/bin:$PATH
COPY --from=wheel /wheels /tmp/wheels
RUN set -eux; \
    if ! command -v python3 >/dev/null 2>&1; then \
        apt-get update; \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            python3 python3-venv ca-certificates; \
        rm -rf /var/lib/apt/lists/*; \
    fi; \
    python3 -c 'import sys; assert sys.version_info >= (3, 11), "flowserve needs Python >= 3.11, the base image has " + sys.version'; \
    python3 -m venv /opt/flowserve; \
    wheel="$(ls /tmp/wheels/flowserve-*.whl)"; \
    /opt/flowserve/bin/pip install --no-cache-dir "${wheel}${EXTRAS:+[$EXTRAS]}"; \
    rm -rf /tmp/wheels; \
    useradd --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin flowserve; \
    flowserve --help >/dev/null

# The bundled example models (half_plus_two, digits) and the scripts that rebuild them;
# mount your own repository over /models to serve other models.
COPY models /models
RUN chmod -R a+rX /models

ENV FLOWSERVE_MODEL_REPOSITORY=/models
USER 10001:10001
EXPOSE 8501 8500
VOLUME ["/models"]
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/v2/health/ready' % os.environ.get('FLOWSERVE_PORT', '8501'), timeout=4)"]
CMD ["flowserve"]
