# umat runs a few of OpenCV's OpenCL (UMat) operations and prints a digest
# of each result: the layer's tests compare them across runs. OpenCV
# returns from its programs without releasing them at exit.
import hashlib

import cv2
import numpy as np

cv2.ocl.setUseOpenCL(True)
if not cv2.ocl.haveOpenCL() or not cv2.ocl.useOpenCL():
    raise SystemExit("OpenCV has no OpenCL device")
rng = np.random.default_rng(20)
img = cv2.UMat(rng.integers(0, 256, (256, 256, 3), dtype=np.uint8))
ops = {
    "cvtColor": lambda: cv2.cvtColor(img, cv2.COLOR_BGR2GRAY),
    "GaussianBlur": lambda: cv2.GaussianBlur(img, (5, 5), 1.5),
    "resize": lambda: cv2.resize(img, (128, 96), interpolation=cv2.INTER_LINEAR),
    "add": lambda: cv2.add(img, img),
}
for name, op in ops.items():
    out = op().get()
    print(name, out.shape, hashlib.sha256(out.tobytes()).hexdigest()[:16])
