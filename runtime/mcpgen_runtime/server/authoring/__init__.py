"""(to be described)"""
