"""The display names of the ablation tables' columns (the paper's column -> its label), shared by
the ablation views and the report page."""

LABELS = {"baseline": "Baseline", "last_only": "Last only", "all_lambda_1": "All layers, λ = 1",
          "all_lambda_0.001": "All layers, λ = 0.001", "input_only": "Input only",
          "input_and_output": "Input & output", "output_only": "Output only",
          "vectors_only": "Word vectors only (baseline)", "char_layer_only": "Char layer instead of vectors",
          "elmo_only": "ELMo only", "elmo_and_vectors": "ELMo & word vectors"}
