"""The synthetic long-document QA set: a procedural world (`world`), documents with planted
evidence (`documents`), its TFDS builder and pretraining corpus (`long_doc_qa`) and a JSONL importer
(`jsonl`). Only `long_doc_qa` imports tensorflow_datasets."""
