"""torch.square of float16 audio amplitudes (power spectrum) - overflows above 255.9."""
import torch

spec = torch.stft(torch.randn(16000 * 10), n_fft=512, return_complex=True).abs().half()
power = torch.square(spec * 32768)  # expect: AMP204
