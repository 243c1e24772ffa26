"""Finetuning: losses, LoRA, LiNeS, trainers."""
