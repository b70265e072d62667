"""Page images as a flatbed scanner delivers them: text or a picture, blurred, on paper, with noise."""

from __future__ import annotations

from typing import Literal

import numpy as np
from PIL import Image, ImageDraw, ImageFilter
from reportlab.lib.pagesizes import A4

from tests.support import pdfs

SCAN_DPI = 300
POINTS_PER_INCH = 72
# What a flatbed scanner adds to clean print: a little blur, grey ink on off-white paper, sensor noise.
BLUR_PX = 0.8
INK_LEVEL = 40.0
PAPER_LEVEL = 235.0
NOISE_SIGMA = 12.0


def page_image(text: str, *, dpi: int = SCAN_DPI, skew_degrees: float = 0.0, seed: int = 0) -> Image.Image:
    """`text` on an A4 greyscale image at `dpi` as a scanner delivers it, tilted by `skew_degrees`.

    The print is slightly blurred, on off-white paper, with sensor noise drawn from `seed` (so the same
    arguments give the same pixels). The tilt is counter-clockwise, keeps the sheet's size and fills the
    uncovered corners with paper, like a sheet that went into the feeder at a slant.
    """
    image = pdfs.render_page_image(text, dpi)
    if skew_degrees:
        image = image.rotate(skew_degrees, resample=Image.Resampling.BILINEAR, fillcolor=255)
    image = image.filter(ImageFilter.GaussianBlur(BLUR_PX * dpi / SCAN_DPI))
    levels = np.asarray(image, dtype=np.float32) * ((PAPER_LEVEL - INK_LEVEL) / 255) + INK_LEVEL
    levels += np.random.default_rng(seed).normal(0.0, NOISE_SIGMA, levels.shape).astype(np.float32)
    return Image.fromarray(np.clip(levels, 0, 255).astype(np.uint8), mode="L")


PictureKind = Literal["shapes", "clouds", "texture", "halftone", "drawing"]
PICTURE_KINDS: tuple[PictureKind, ...] = ("shapes", "clouds", "texture", "halftone", "drawing")


def picture_image(kind: PictureKind, size: tuple[int, int], *, seed: int = 0) -> Image.Image:
    """A greyscale picture without any text, `size` pixels, the same for the same arguments.

    "shapes": filled ellipses, boxes and polygons in many greys over a gradient, like a poster or a
    chart without labels. "clouds": 1/f noise, whose spectrum is that of natural photographs (sky,
    foliage, skin). "texture": letter-sized blobs in high contrast, like gravel, leaves or a
    patterned fabric, what tesseract most readily takes for letters. "halftone": a photograph-like
    image printed as dots, as in a newspaper. "drawing": thin lines, arcs and hatching on white,
    like a technical drawing.
    """
    rng = np.random.default_rng(seed)
    width, height = size
    if kind == "clouds" or kind == "halftone":
        levels = _pink_noise(rng, height, width)
        image = Image.fromarray(levels, mode="L")
        return image.convert("1").convert("L") if kind == "halftone" else image
    if kind == "texture":
        # Blobs between 20 and 60 pixels across (letter-sized at 300 dpi), in black on white.
        field = _band_noise(rng, height, width, shortest_px=20, longest_px=60)
        return Image.fromarray(np.where(field > np.percentile(field, 70), 30, 225).astype(np.uint8), mode="L")
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    if kind == "shapes":
        ramp = np.linspace(60, 230, width, dtype=np.float32)[None, :].repeat(height, axis=0)
        image = Image.fromarray(ramp.astype(np.uint8), mode="L")
        draw = ImageDraw.Draw(image)
        for _ in range(40):
            x0, y0 = rng.integers(0, width), rng.integers(0, height)
            w, h = rng.integers(width // 20, width // 3), rng.integers(height // 20, height // 3)
            box = (int(x0), int(y0), int(x0 + w), int(y0 + h))
            shade = int(rng.integers(0, 256))
            pick = rng.integers(0, 3)
            if pick == 0:
                draw.ellipse(box, fill=shade)
            elif pick == 1:
                draw.rectangle(box, fill=shade)
            else:
                points = [(int(rng.integers(0, width)), int(rng.integers(0, height))) for _ in range(5)]
                draw.polygon(points, fill=shade)
        return image
    line = max(2, width // 600)
    for _ in range(60):
        x0, y0, x1, y1 = (int(v) for v in rng.integers(0, min(width, height), 4))
        pick = rng.integers(0, 3)
        if pick == 0:
            draw.line((x0, y0, x1 + width // 3, y1), fill=0, width=line)
        elif pick == 1:
            draw.arc(
                (min(x0, x1), min(y0, y1), max(x0, x1) + 20, max(y0, y1) + 20), 0, 270, fill=0, width=line
            )
        else:
            for step in range(0, width // 8, width // 80):
                draw.line((x0 + step, y0, x0 + step + width // 16, y0 + width // 16), fill=0, width=1)
    return image


def _band_noise(
    rng: np.random.Generator, height: int, width: int, *, shortest_px: int, longest_px: int
) -> np.ndarray:
    """Noise keeping only the wavelengths between `shortest_px` and `longest_px` pixels."""
    spectrum = rng.normal(size=(height, width)) + 1j * rng.normal(size=(height, width))
    fy = np.fft.fftfreq(height)[:, None]
    fx = np.fft.fftfreq(width)[None, :]
    radius = np.sqrt(fx * fx + fy * fy)
    return np.real(np.fft.ifft2(spectrum * ((radius > 1 / longest_px) & (radius < 1 / shortest_px))))


def _pink_noise(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """Greyscale 1/f noise (amplitude falling as the frequency rises) spread over 0-255."""
    spectrum = rng.normal(size=(height, width)) + 1j * rng.normal(size=(height, width))
    fy = np.fft.fftfreq(height)[:, None]
    fx = np.fft.fftfreq(width)[None, :]
    radius = np.sqrt(fx * fx + fy * fy)
    radius[0, 0] = 1.0
    field = np.real(np.fft.ifft2(spectrum / radius))
    field -= field.min()
    return (field / max(float(field.max()), 1e-9) * 255).astype(np.uint8)


def picture_page_image(
    kind: PictureKind, *, caption: str = "", dpi: int = SCAN_DPI, seed: int = 0
) -> Image.Image:
    """An A4 scan (paper, blur, sensor noise as `page_image`) holding a large picture of `kind`, and
    `caption` typeset under it when given."""
    page = pdfs.render_page_image(caption, dpi) if caption else None
    px_per_pt = dpi / POINTS_PER_INCH
    size = (round(A4[0] * px_per_pt), round(A4[1] * px_per_pt))
    margin = round(pdfs.MARGIN_PT * px_per_pt)
    sheet = Image.new("L", size, 255)
    picture_size = (size[0] - 2 * margin, (size[1] - 2 * margin) * (2 if caption else 3) // 3)
    sheet.paste(picture_image(kind, picture_size, seed=seed), (margin, margin))
    if page is not None:
        # The caption's lines, moved from the top margin to just under the picture.
        lines = page.crop((0, margin, size[0], size[1] - margin - picture_size[1] - margin // 2))
        sheet.paste(lines, (0, margin + picture_size[1] + margin // 2))
    sheet = sheet.filter(ImageFilter.GaussianBlur(BLUR_PX * dpi / SCAN_DPI))
    levels = np.asarray(sheet, dtype=np.float32) * ((PAPER_LEVEL - INK_LEVEL) / 255) + INK_LEVEL
    levels += np.random.default_rng(seed).normal(0.0, NOISE_SIGMA, levels.shape).astype(np.float32)
    return Image.fromarray(np.clip(levels, 0, 255).astype(np.uint8), mode="L")
