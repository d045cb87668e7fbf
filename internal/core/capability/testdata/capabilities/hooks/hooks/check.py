import json, sys
print(json.dumps({'decision': 'approve'}))
