"""LoRA adapters as files: the peft format, attaching one to a model, and adapter arithmetic.

``lora`` (targets, ``add_lora``, ``save_adapter``, ``read_lora_adapter``, ``attach_adapter``),
``soup`` (``bindkit soup``: the exact weighted mean of adapters' updates), ``lines`` (LiNeS:
``bindkit lines`` and the live α sweep) and ``out`` (how a new adapter directory is written).
It sits below ``embed`` (the backends attach adapters at load time) and ``train`` (which makes
them); torch, peft and safetensors are imported only inside the functions that use them.
"""
