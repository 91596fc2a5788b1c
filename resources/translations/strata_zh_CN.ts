<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>AboutPage</name>
    <message>
        <source>About</source>
        <translation>关于</translation>
    </message>
    <message>
        <source>Strata runs local language models on AMD Radeon GPUs and Ryzen AI APUs with ROCm, Vulkan or CPU engines — no HIP SDK or toolchain needed.</source>
        <translation>Strata 借助 ROCm、Vulkan 或 CPU 引擎，在 AMD Radeon GPU 和 Ryzen AI APU 上运行本地语言模型——无需 HIP SDK 或任何工具链。</translation>
    </message>
    <message>
        <source>Copy report</source>
        <translation>复制报告</translation>
    </message>
    <message>
        <source>Open log folder</source>
        <translation>打开日志文件夹</translation>
    </message>
    <message>
        <source>About Strata</source>
        <translation>关于 Strata</translation>
    </message>
    <message>
        <source>Version %s</source>
        <translation>版本 %s</translation>
    </message>
    <message>
        <source>Report copied to the clipboard.</source>
        <translation>报告已复制到剪贴板。</translation>
    </message>
</context>
<context>
    <name>ActivityPanel</name>
    <message>
        <source>Activity</source>
        <translation>活动</translation>
    </message>
    <message>
        <source>Time</source>
        <translation>时间</translation>
    </message>
    <message>
        <source>Client</source>
        <translation>客户端</translation>
    </message>
    <message>
        <source>API</source>
        <translation>接口</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Tokens in → out</source>
        <translation>token 输入 → 输出</translation>
    </message>
    <message>
        <source>First token</source>
        <translation>首个 token</translation>
    </message>
    <message>
        <source>Decode</source>
        <translation>解码</translation>
    </message>
    <message>
        <source>Waited</source>
        <translation>等待</translation>
    </message>
    <message>
        <source>No requests yet. Each request of another app appears here as it ends.</source>
        <translation>还没有请求。其他应用的每个请求结束后都会显示在这里。</translation>
    </message>
    <message>
        <source>Apps may download, copy and delete models</source>
        <translation>允许应用下载、复制和删除模型</translation>
    </message>
    <message>
        <source>Ollama&apos;s /api/pull, /api/copy and /api/delete (Open WebUI&apos;s model manager uses them). Beyond this computer they need the API key, like every address.</source>
        <translation>Ollama 的 /api/pull、/api/copy 和 /api/delete（Open WebUI 的模型管理器使用它们）。在本机以外访问时，与其他地址一样需要 API 密钥。</translation>
    </message>
    <message>
        <source>Keep request bodies (keys and images left out)</source>
        <translation>保留请求正文（不含密钥和图片）</translation>
    </message>
    <message>
        <source>No body kept: turn on “Keep request bodies” to see the next requests&apos; bodies.</source>
        <translation>未保留正文：打开“保留请求正文”即可查看之后请求的正文。</translation>
    </message>
</context>
<context>
    <name>AddServerDialog</name>
    <message>
        <source>Add a tool server</source>
        <translation>添加工具服务器</translation>
    </message>
    <message>
        <source>files</source>
        <translation>文件</translation>
    </message>
    <message>
        <source>npx -y @modelcontextprotocol/server-filesystem ~/notes  or  https://host/mcp</source>
        <translation>npx -y @modelcontextprotocol/server-filesystem ~/notes 或 https://host/mcp</translation>
    </message>
    <message>
        <source>A command is started on this computer and spoken to over stdio; an address (http:// or https://) is reached as a streamable-HTTP MCP server. Secrets such as API keys: import a JSON file with &quot;env&quot; or &quot;headers&quot; (they are kept in the key store).</source>
        <translation>命令会在本机启动，并通过 stdio 通信；地址（http:// 或 https://）会作为可流式 HTTP 的 MCP 服务器连接。API 密钥等机密信息：请导入带有 &quot;env&quot; 或 &quot;headers&quot; 的 JSON 文件（它们会保存在密钥存储中）。</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Command or address</source>
        <translation>命令或地址</translation>
    </message>
    <message>
        <source>The command line cannot be read: {0}</source>
        <translation>无法解析命令行：{0}</translation>
    </message>
</context>
<context>
    <name>AttachmentStrip</name>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Do not send this image</source>
        <translation>不发送这张图片</translation>
    </message>
</context>
<context>
    <name>ChatInput</name>
    <message>
        <source>Message the model…  (Enter sends, Shift+Enter adds a line)</source>
        <translation>给模型发消息…（Enter 发送，Shift+Enter 换行）</translation>
    </message>
</context>
<context>
    <name>ChatPage</name>
    <message>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <source>Search conversations</source>
        <translation>搜索对话</translation>
    </message>
    <message>
        <source>New chat</source>
        <translation>新对话</translation>
    </message>
    <message>
        <source>Rename</source>
        <translation>重命名</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>Choose model…</source>
        <translation>选择模型…</translation>
    </message>
    <message>
        <source>Engine folder…</source>
        <translation>引擎文件夹…</translation>
    </message>
    <message>
        <source>Choose the folder of an installed llama.cpp engine</source>
        <translation>选择已安装的 llama.cpp 引擎所在的文件夹</translation>
    </message>
    <message>
        <source>Where replies are computed: this computer or a remote engine</source>
        <translation>回复在哪里计算：本机或远程引擎</translation>
    </message>
    <message>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>Show earlier messages</source>
        <translation>显示更早的消息</translation>
    </message>
    <message>
        <source>Attach…</source>
        <translation>附加…</translation>
    </message>
    <message>
        <source>Attach documents (PDF, Word, HTML, Markdown, text, code: the reply cites them) or pictures for a vision model; you can also paste or drop them</source>
        <translation>附加文档（PDF、Word、HTML、Markdown、文本、代码：回复会引用它们）或给视觉模型的图片；也可以粘贴或拖放</translation>
    </message>
    <message>
        <source>No speech was heard in the recording.</source>
        <translation>录音中没有听到语音。</translation>
    </message>
    <message>
        <source>Attach documents or images</source>
        <translation>附加文档或图片</translation>
    </message>
    <message>
        <source>Documents and images (*.pdf *.docx *.html *.htm *.md *.txt *.png *.jpg *.jpeg *.gif *.bmp);;All files (*)</source>
        <translation>文档和图片 (*.pdf *.docx *.html *.htm *.md *.txt *.png *.jpg *.jpeg *.gif *.bmp);;所有文件 (*)</translation>
    </message>
    <message>
        <source>&lt;h3&gt;Start a conversation&lt;/h3&gt;&lt;p&gt;Choose a model (a .gguf file) above, then type a message below.&lt;br&gt;Strata starts the engine for you and switches to another engine if one fails.&lt;/p&gt;</source>
        <translation>&lt;h3&gt;开始对话&lt;/h3&gt;&lt;p&gt;先在上方选择一个模型（.gguf 文件），再在下方输入消息。&lt;br&gt;Strata 会为你启动引擎；某个引擎出错时会自动换用另一个。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>Load options</source>
        <translation>加载选项</translation>
    </message>
    <message>
        <source>Tools</source>
        <translation>工具</translation>
    </message>
    <message>
        <source>MCP tool servers the model may call (every call asks you first)</source>
        <translation>模型可以调用的 MCP 工具服务器（每次调用都会先征求你的同意）</translation>
    </message>
    <message>
        <source>Preset</source>
        <translation>预设</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Context used by this conversation / context size</source>
        <translation>本对话已用上下文 / 上下文大小</translation>
    </message>
    <message>
        <source>{0}
Last reply: remote engine {1}</source>
        <translation>{0}
上一条回复：远程引擎 {1}</translation>
    </message>
    <message>
        <source>{0}
Last reply: this computer ({1})</source>
        <translation>{0}
上一条回复：本机（{1}）</translation>
    </message>
    <message>
        <source>Forget the conversation&apos;s documents</source>
        <translation>清除该对话的文档</translation>
    </message>
    <message>
        <source>Rename conversation</source>
        <translation>重命名对话</translation>
    </message>
    <message>
        <source>Title:</source>
        <translation>标题：</translation>
    </message>
    <message>
        <source>Delete conversation</source>
        <translation>删除对话</translation>
    </message>
    <message>
        <source>Delete this conversation and all its messages?</source>
        <translation>删除此对话及其全部消息？</translation>
    </message>
    <message>
        <source>This conversation was answered by {0}, which is no longer on disk.</source>
        <translation>此对话由 {0} 回答，但该模型已不在磁盘上。</translation>
    </message>
    <message>
        <source>The next reply comes from {0}.</source>
        <translation>下一条回复将来自 {0}。</translation>
    </message>
    <message>
        <source>Choose a model above to go on.</source>
        <translation>请在上方选择一个模型以继续。</translation>
    </message>
    <message>
        <source>Continue with {0}</source>
        <translation>使用 {0} 继续</translation>
    </message>
    <message>
        <source>Add dropped model</source>
        <translation>添加拖入的模型</translation>
    </message>
    <message>
        <source>The Chat page uses chat models; the file stays in your library (Models page).</source>
        <translation>“对话”页面使用对话模型；该文件会保留在模型库中（“模型”页面）。</translation>
    </message>
    <message>
        <source>Edit and resend</source>
        <translation>编辑并重新发送</translation>
    </message>
    <message>
        <source>Chat reply</source>
        <translation>聊天回复</translation>
    </message>
    <message>
        <source>Regenerate reply</source>
        <translation>重新生成回复</translation>
    </message>
    <message>
        <source>Retry without format parsing</source>
        <translation>不解析格式重试</translation>
    </message>
    <message>
        <source>Editing your message: Enter resends it and replaces the replies after it.</source>
        <translation>正在编辑你的消息：按 Enter 重新发送，并替换其后的回复。</translation>
    </message>
    <message>
        <source>Switch to %s</source>
        <translation>切换到 %s</translation>
    </message>
    <message>
        <source>No model chosen</source>
        <translation>未选择模型</translation>
    </message>
    <message>
        <source>&lt;h3&gt;Start a conversation&lt;/h3&gt;&lt;p&gt;Type a message below to chat with {0}.&lt;br&gt;Strata starts the engine for you and switches to another engine if one fails.&lt;/p&gt;</source>
        <translation>&lt;h3&gt;开始对话&lt;/h3&gt;&lt;p&gt;在下方输入消息，与 {0} 对话。&lt;br&gt;Strata 会为你启动引擎；某个引擎出错时会自动换用另一个。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>Reading your library…</source>
        <translation>正在读取模型库…</translation>
    </message>
    <message>
        <source>No models in your library yet</source>
        <translation>模型库中还没有模型</translation>
    </message>
    <message>
        <source>Browse for a GGUF file…</source>
        <translation>浏览 GGUF 文件…</translation>
    </message>
    <message>
        <source>Choose a model</source>
        <translation>选择模型</translation>
    </message>
    <message>
        <source>GGUF models (*.gguf)</source>
        <translation>GGUF 模型 (*.gguf)</translation>
    </message>
    <message>
        <source>Choose an engine folder</source>
        <translation>选择引擎文件夹</translation>
    </message>
    <message>
        <source>Check engine folder</source>
        <translation>检查引擎文件夹</translation>
    </message>
    <message>
        <source>Switch engine</source>
        <translation>切换引擎</translation>
    </message>
    <message>
        <source>Start preferred engine</source>
        <translation>启动首选引擎</translation>
    </message>
    <message>
        <source>This computer</source>
        <translation>本机</translation>
    </message>
    <message>
        <source>Remote: {0}</source>
        <translation>远程：{0}</translation>
    </message>
    <message>
        <source>● Remote engine: {0}</source>
        <translation>● 远程引擎：{0}</translation>
    </message>
    <message>
        <source>No engine chosen: pick an engine folder.</source>
        <translation>未选择引擎：请选择一个引擎文件夹。</translation>
    </message>
    <message>
        <source>Starting the {0} engine…</source>
        <translation>正在启动 {0} 引擎…</translation>
    </message>
    <message>
        <source>Loading the model on {0}… {1}</source>
        <translation>正在 {0} 上加载模型… {1}</translation>
    </message>
    <message>
        <source>● {0} engine ready, instead of {1} (see the notice above)</source>
        <translation>● {0} 引擎已就绪，代替了 {1}（原因见上方提示）</translation>
    </message>
    <message>
        <source>● {0} engine ready</source>
        <translation>● {0} 引擎已就绪</translation>
    </message>
    <message>
        <source>runs on the CPU</source>
        <translation>在 CPU 上运行</translation>
    </message>
    <message>
        <source>{0} engine failed: {1}</source>
        <translation>{0} 引擎出错：{1}</translation>
    </message>
    <message>
        <source>A remote engine loads its model with its own options</source>
        <translation>远程引擎用它自己的选项加载模型</translation>
    </message>
    <message>
        <source>Engine: {0} (starts with your first message)</source>
        <translation>引擎：{0}（发送第一条消息时启动）</translation>
    </message>
    <message>
        <source>Retry {0}</source>
        <translation>重试 {0}</translation>
    </message>
    <message>
        <source>Why: {0}</source>
        <translation>原因：{0}</translation>
    </message>
    <message>
        <source>Not used: {0} — {1}</source>
        <translation>未使用：{0} — {1}</translation>
    </message>
    <message>
        <source>Engine log</source>
        <translation>引擎日志</translation>
    </message>
    <message>
        <source>Context: {0:,} / {1:,} tokens</source>
        <translation>上下文：{0:,} / {1:,} 个 token</translation>
    </message>
    <message>
        <source>New chat ({0})</source>
        <translation>新对话（{0}）</translation>
    </message>
    <message>
        <source>Stop the reply ({0})</source>
        <translation>停止回复（{0}）</translation>
    </message>
    <message>
        <source>Choose the model ({0})</source>
        <translation>选择模型（{0}）</translation>
    </message>
</context>
<context>
    <name>CodeBlock</name>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>Copy this code</source>
        <translation>复制这段代码</translation>
    </message>
    <message>
        <source>code</source>
        <translation>代码</translation>
    </message>
</context>
<context>
    <name>ConversationMenu</name>
    <message>
        <source>Export this conversation, or import conversations from ChatGPT or Open WebUI</source>
        <translation>导出此对话，或从 ChatGPT 或 Open WebUI 导入对话</translation>
    </message>
    <message>
        <source>Export as Markdown…</source>
        <translation>导出为 Markdown…</translation>
    </message>
    <message>
        <source>Export as JSON…</source>
        <translation>导出为 JSON…</translation>
    </message>
    <message>
        <source>Export as HTML…</source>
        <translation>导出为 HTML…</translation>
    </message>
    <message>
        <source>Import from ChatGPT or Open WebUI…</source>
        <translation>从 ChatGPT 或 Open WebUI 导入…</translation>
    </message>
    <message>
        <source>Markdown (*.md)</source>
        <translation>Markdown 文件 (*.md)</translation>
    </message>
    <message>
        <source>JSON (*.json)</source>
        <translation>JSON 文件 (*.json)</translation>
    </message>
    <message>
        <source>Web page (*.html)</source>
        <translation>网页 (*.html)</translation>
    </message>
    <message>
        <source>Export conversation</source>
        <translation>导出对话</translation>
    </message>
    <message>
        <source>Could not write {0}: {1}</source>
        <translation>无法写入 {0}：{1}</translation>
    </message>
    <message>
        <source>Exported to {0}</source>
        <translation>已导出到 {0}</translation>
    </message>
    <message>
        <source>Import conversations</source>
        <translation>导入对话</translation>
    </message>
    <message>
        <source>Exports (*.json);;All files (*)</source>
        <translation>导出文件 (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Imported 1 conversation from {0}.</source>
        <translation>已从 {0} 导入 1 个对话。</translation>
    </message>
    <message>
        <source>Imported {0} conversations from {1}.</source>
        <translation>已从 {1} 导入 {0} 个对话。</translation>
    </message>
    <message>
        <source>Empty conversations left out: {0}.</source>
        <translation>已略过空对话：{0}。</translation>
    </message>
</context>
<context>
    <name>ConversationSettingsPanel</name>
    <message>
        <source>default</source>
        <translation>默认</translation>
    </message>
    <message>
        <source>Conversation settings</source>
        <translation>对话设置</translation>
    </message>
    <message>
        <source>System prompt (optional): how the assistant should behave</source>
        <translation>系统提示词（可选）：助手应当如何表现</translation>
    </message>
    <message>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <source>Top-p</source>
        <translation>Top-p</translation>
    </message>
    <message>
        <source>Top-k</source>
        <translation>Top-k</translation>
    </message>
    <message>
        <source>Min-p</source>
        <translation>Min-p</translation>
    </message>
    <message>
        <source>Max tokens</source>
        <translation>最大 token 数</translation>
    </message>
    <message>
        <source>Seed</source>
        <translation>随机种子</translation>
    </message>
    <message>
        <source>Longest reply in tokens; default: the model&apos;s reply limit (Load options), else 8,192</source>
        <translation>回复的最大 token 数；默认：模型的回复上限（加载选项），否则为 8,192</translation>
    </message>
    <message>
        <source>Text</source>
        <translation>文本</translation>
    </message>
    <message>
        <source>JSON</source>
        <translation>JSON 格式</translation>
    </message>
    <message>
        <source>JSON following a schema</source>
        <translation>符合 schema 的 JSON</translation>
    </message>
    <message>
        <source>Reply format</source>
        <translation>回复格式</translation>
    </message>
    <message>
        <source>Schema</source>
        <translation>结构定义（Schema）</translation>
    </message>
</context>
<context>
    <name>Core</name>
    <message>
        <source>TTFT {ms} ms</source>
        <translation>首 token {ms} ms</translation>
    </message>
    <message>
        <source>thought {tokens} tokens in {duration}</source>
        <translation>思考 {tokens} 个 token，用时 {duration}</translation>
    </message>
    <message>
        <source>thought {tokens} tokens</source>
        <translation>思考 {tokens} 个 token</translation>
    </message>
    <message>
        <source>answer after {duration}</source>
        <translation>{duration} 后开始回答</translation>
    </message>
    <message>
        <source>{cached} of {total} prompt tokens cached</source>
        <translation>提示词 {total} 个 token 中 {cached} 个来自缓存</translation>
    </message>
    <message>
        <source>prefill {rate} tok/s</source>
        <translation>预填充 {rate} tok/s</translation>
    </message>
    <message>
        <source>decode {rate} tok/s</source>
        <translation>解码 {rate} tok/s</translation>
    </message>
    <message>
        <source>{percent} % of its measured peak</source>
        <translation>实测峰值的 {percent} %</translation>
    </message>
    <message>
        <source>{percent} % of its nominal peak</source>
        <translation>标称峰值的 {percent} %</translation>
    </message>
    <message>
        <source>{count} tokens generated, thinking included</source>
        <translation>已生成 {count} 个 token（含思考）</translation>
    </message>
    <message>
        <source>{count} tokens generated</source>
        <translation>已生成 {count} 个 token</translation>
    </message>
    <message>
        <source>stopped at the output limit</source>
        <translation>已达到输出上限而停止</translation>
    </message>
    <message>
        <source>called a tool</source>
        <translation>调用了工具</translation>
    </message>
    <message>
        <source>withheld by the server&apos;s content filter</source>
        <translation>被服务器的内容过滤器拦下</translation>
    </message>
    <message>
        <source>draft accepted {share} ({accepted}/{drafted})</source>
        <translation>草稿接受率 {share}（{accepted}/{drafted}）</translation>
    </message>
    <message>
        <source>stopped at the output limit ({limit} tokens)</source>
        <translation>已达到输出上限（{limit} 个 token）</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>{percent} % of the CPU&apos;s measured memory limit</source>
        <translation>CPU 实测内存上限的 {percent} %</translation>
    </message>
    <message>
        <source>{percent} % of the CPU&apos;s memory limit</source>
        <translation>达到 CPU 内存带宽上限的 {percent} %</translation>
    </message>
    <message>
        <source>{percent} % of this GPU + CPU&apos;s memory limit</source>
        <translation>达到此 GPU + CPU 内存带宽上限的 {percent} %</translation>
    </message>
    <message>
        <source>{percent} % of this GPU&apos;s memory limit</source>
        <translation>达到此 GPU 内存带宽上限的 {percent} %</translation>
    </message>
    <message>
        <source>{percent} % of the CPU&apos;s compute limit at the clock it reports (it runs faster)</source>
        <translation>按 CPU 报告的时钟计算，为其计算上限的 {percent} %（它实际运行得更快）</translation>
    </message>
    <message>
        <source>{percent} % of the CPU&apos;s compute limit</source>
        <translation>CPU 计算上限的 {percent} %</translation>
    </message>
    <message>
        <source>{percent} % of this GPU&apos;s compute limit</source>
        <translation>此 GPU 计算上限的 {percent} %</translation>
    </message>
    <message>
        <source>Could not reach the engine at {url}.</source>
        <translation>无法连接位于 {url} 的引擎。</translation>
    </message>
    <message>
        <source>The engine may have stopped; Strata restarts it on the next message.</source>
        <translation>引擎可能已停止；发送下一条消息时 Strata 会重新启动它。</translation>
    </message>
    <message>
        <source>The engine did not answer in time.</source>
        <translation>引擎未能及时响应。</translation>
    </message>
    <message>
        <source>The engine stopped answering in the middle of the reply.</source>
        <translation>引擎在回复中途停止了响应。</translation>
    </message>
    <message>
        <source>The engine probably crashed; the partial reply was kept.</source>
        <translation>引擎可能已崩溃；已保留部分回复。</translation>
    </message>
    <message>
        <source>The engine sent a reply Strata cannot read.</source>
        <translation>引擎发来的回复 Strata 无法读取。</translation>
    </message>
    <message>
        <source>The server rejected the API key.</source>
        <translation>服务器拒绝了该 API 密钥。</translation>
    </message>
    <message>
        <source>Check the API key in Settings.</source>
        <translation>请在设置中检查 API 密钥。</translation>
    </message>
    <message>
        <source>The engine is still loading the model.</source>
        <translation>引擎仍在加载模型。</translation>
    </message>
    <message>
        <source>Try again in a moment.</source>
        <translation>请稍后再试。</translation>
    </message>
    <message>
        <source>The conversation is too long for the model&apos;s context: {reason}</source>
        <translation>对话超出了模型的上下文长度：{reason}</translation>
    </message>
    <message>
        <source>Start a new conversation or raise the context size in Settings.</source>
        <translation>请开始新对话，或在设置中增大上下文大小。</translation>
    </message>
    <message>
        <source>The engine refused the request: {reason}</source>
        <translation>引擎拒绝了该请求：{reason}</translation>
    </message>
    <message>
        <source>The engine failed while answering: {reason}</source>
        <translation>引擎在回复时出错：{reason}</translation>
    </message>
    <message>
        <source>Checking {name}</source>
        <translation>正在检查 {name}</translation>
    </message>
    <message>
        <source>The engine in {folder} does not work here: {reason}.</source>
        <translation>{folder} 中的引擎无法在本机运行：{reason}。</translation>
    </message>
    <message>
        <source>Choose another build, or leave the engine to Strata.</source>
        <translation>请选择其他构建，或让 Strata 自动选择引擎。</translation>
    </message>
    <message>
        <source>not checked on this machine yet</source>
        <translation>尚未在本机检查</translation>
    </message>
    <message>
        <source>you chose this engine folder</source>
        <translation>你选择了这个引擎文件夹</translation>
    </message>
    <message>
        <source>your next engine folder</source>
        <translation>你的下一个引擎文件夹</translation>
    </message>
    <message>
        <source>{reason}; {lead}</source>
        <translation>{reason}；{lead}</translation>
    </message>
    <message>
        <source>you chose it for this model on this GPU</source>
        <translation>你为此模型在这块 GPU 上选择了它</translation>
    </message>
    <message>
        <source>pinned (strata engines pin / Engines page)</source>
        <translation>已固定（strata engines pin / 引擎页面）</translation>
    </message>
    <message>
        <source>measured fastest for this model on this GPU</source>
        <translation>实测此模型在这块 GPU 上最快</translation>
    </message>
    <message>
        <source>{reason} (not checked on this machine yet)</source>
        <translation>{reason}（尚未在本机检查）</translation>
    </message>
    <message>
        <source>{reason}; {where}</source>
        <translation>{reason}；{where}</translation>
    </message>
    <message>
        <source>runs on the processor; last in the order {order}</source>
        <translation>在处理器上运行；在 {order} 顺序中排最后</translation>
    </message>
    <message>
        <source>{backend} in the order {order} for {gfx}</source>
        <translation>{gfx} 按 {order} 顺序使用 {backend}</translation>
    </message>
    <message>
        <source>{backend} in the order {order} with no AMD GPU detected</source>
        <translation>未检测到 AMD GPU，按 {order} 顺序使用 {backend}</translation>
    </message>
    <message>
        <source>{backend} (your build: {folder})</source>
        <translation>{backend}（自行构建：{folder}）</translation>
    </message>
    <message>
        <source>you chose it for this model on this machine</source>
        <translation>你为此模型在本机上选择了它</translation>
    </message>
    <message>
        <source>measured fastest for this model on this machine</source>
        <translation>实测此模型在本机上最快</translation>
    </message>
    <message>
        <source>{name} stopped.</source>
        <translation>{name} 已停止。</translation>
    </message>
    <message>
        <source>{name} could not be started: {reason}.</source>
        <translation>{name} 无法启动：{reason}。</translation>
    </message>
    <message>
        <source>{name} is not installed ({path} is missing).</source>
        <translation>{name} 未安装（缺少 {path}）。</translation>
    </message>
    <message>
        <source>No image engine can run here. ({reasons})</source>
        <translation>本机没有可运行的图像引擎。（{reasons}）</translation>
    </message>
    <message>
        <source>No image engine can run here.</source>
        <translation>本机没有可运行的图像引擎。</translation>
    </message>
    <message>
        <source>Install an image engine: strata engines install --images (or the Engines page).</source>
        <translation>请安装一个图像引擎：strata engines install --images（或在“引擎”页面安装）。</translation>
    </message>
    <message>
        <source>{reason} Switching to {engine} and sending the job again.</source>
        <translation>{reason} 正在切换到 {engine} 并重新发送任务。</translation>
    </message>
    <message>
        <source>{reason} Switching to {engine}.</source>
        <translation>{reason} 正在切换到 {engine}。</translation>
    </message>
    <message>
        <source>{model} is not an image model stable-diffusion.cpp can load.</source>
        <translation>{model} 不是 stable-diffusion.cpp 能加载的图像模型。</translation>
    </message>
    <message>
        <source>Choose a Stable Diffusion model (GGUF or safetensors).</source>
        <translation>请选择 Stable Diffusion 模型（GGUF 或 safetensors）。</translation>
    </message>
    <message>
        <source>The image engine was stopped.</source>
        <translation>图像引擎已被停止。</translation>
    </message>
    <message>
        <source>No image engine could make the image. {reason}</source>
        <translation>没有图像引擎能够生成该图像。{reason}</translation>
    </message>
    <message>
        <source>See the engine log; try a smaller size or another model.</source>
        <translation>请查看引擎日志；可尝试更小的尺寸或其他模型。</translation>
    </message>
    <message>
        <source>The sampler &apos;{sampler}&apos; is not one this engine knows.</source>
        <translation>此引擎不认识采样器“{sampler}”。</translation>
    </message>
    <message>
        <source>Choose one of: {samplers}</source>
        <translation>请从以下选项中选择：{samplers}</translation>
    </message>
    <message>
        <source>The engine made {made} of {count} images.</source>
        <translation>引擎只生成了 {count} 张图像中的 {made} 张。</translation>
    </message>
    <message>
        <source>The model file {path} cannot be used: {reason}</source>
        <translation>模型文件 {path} 无法使用：{reason}</translation>
    </message>
    <message>
        <source>The model file {path} does not exist.</source>
        <translation>模型文件 {path} 不存在。</translation>
    </message>
    <message>
        <source>Choose another image model.</source>
        <translation>请选择其他图像模型。</translation>
    </message>
    <message>
        <source>{name} could not load the model file: it is damaged or not a supported GGUF model.</source>
        <translation>{name} 无法加载模型文件：文件已损坏，或不是受支持的 GGUF 模型。</translation>
    </message>
    <message>
        <source>{name} could not start: a library it needs was not found ({library} is missing).</source>
        <translation>{name} 无法启动：找不到所需的库（缺少 {library}）。</translation>
    </message>
    <message>
        <source>{name} could not start: a library it needs was not found.</source>
        <translation>{name} 无法启动：找不到所需的库。</translation>
    </message>
    <message>
        <source>{name} could not listen: the network port is already in use by another program.</source>
        <translation>{name} 无法监听：该网络端口已被其他程序占用。</translation>
    </message>
    <message>
        <source>{name} did not become ready within {seconds} s.</source>
        <translation>{name} 在 {seconds} 秒内未就绪。</translation>
    </message>
    <message>
        <source>{name} ran out of memory while loading the model.</source>
        <translation>{name} 在加载模型时内存不足。</translation>
    </message>
    <message>
        <source>{name} ran out of memory while {activity}.</source>
        <translation>{name} 在{activity}时内存不足。</translation>
    </message>
    <message>
        <source>no exit code</source>
        <translation>无退出码</translation>
    </message>
    <message>
        <source>{name} crashed while loading ({code}).</source>
        <translation>{name} 在加载时崩溃（{code}）。</translation>
    </message>
    <message>
        <source>{name} crashed while {activity} ({code}).</source>
        <translation>{name} 在{activity}时崩溃（{code}）。</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行</translation>
    </message>
    <message>
        <source>answering</source>
        <translation>回答</translation>
    </message>
    <message>
        <source>making the image</source>
        <translation>生成图像</translation>
    </message>
    <message>
        <source>Check the model file, or download it again.</source>
        <translation>请检查模型文件，或重新下载。</translation>
    </message>
    <message>
        <source>Try a smaller context size, fewer GPU layers or a smaller quantization.</source>
        <translation>请尝试更小的上下文长度、更少的 GPU 层数或更小的量化版本。</translation>
    </message>
    <message>
        <source>Reinstall this engine, or choose another one.</source>
        <translation>请重新安装此引擎，或选择其他引擎。</translation>
    </message>
    <message>
        <source>Close the program using that port, or let Strata pick a free port.</source>
        <translation>请关闭占用该端口的程序，或让 Strata 选择一个空闲端口。</translation>
    </message>
    <message>
        <source>The model may be too large for this machine; try a smaller one or another engine.</source>
        <translation>模型可能对这台机器来说太大；请尝试更小的模型或其他引擎。</translation>
    </message>
    <message>
        <source>Try another engine (Vulkan or CPU); the log has details.</source>
        <translation>请尝试其他引擎（Vulkan 或 CPU）；日志中有详细信息。</translation>
    </message>
    <message>
        <source>Loading model…</source>
        <translation>正在加载模型…</translation>
    </message>
    <message>
        <source>Offloaded {done}/{total} layers to the GPU</source>
        <translation>已将 {done}/{total} 层卸载到 GPU</translation>
    </message>
    <message>
        <source>Model loaded, warming up…</source>
        <translation>模型已加载，正在预热…</translation>
    </message>
    <message>
        <source>{reason} Continuing on {engine}.</source>
        <translation>{reason}改用 {engine} 继续。</translation>
    </message>
    <message>
        <source>Strata is shutting its engines down.</source>
        <translation>Strata 正在关闭其引擎。</translation>
    </message>
    <message>
        <source>Waited {seconds:.0f} s: {reason}</source>
        <translation>已等待 {seconds:.0f} 秒：{reason}</translation>
    </message>
    <message>
        <source>the engine is still loading.</source>
        <translation>引擎仍在加载。</translation>
    </message>
    <message>
        <source>Try again in a minute.</source>
        <translation>请一分钟后再试。</translation>
    </message>
    <message>
        <source>{model} is being unloaded; it loads again once it has stopped.</source>
        <translation>正在卸载 {model}；停止后会重新加载。</translation>
    </message>
    <message>
        <source>Waiting for the {users} to finish with {model}</source>
        <translation>正在等待 {users} 用完 {model}</translation>
    </message>
    <message>
        <source>Waiting: 1 request ahead for {model}</source>
        <translation>等待中：{model} 前面还有 1 个请求</translation>
    </message>
    <message>
        <source>Waiting: {n} requests ahead for {model}</source>
        <translation>等待中：{model} 前面还有 {n} 个请求</translation>
    </message>
    <message>
        <source>Try again when the current request is done.</source>
        <translation>请在当前请求完成后再试。</translation>
    </message>
    <message>
        <source>Waiting for the {user} to finish</source>
        <translation>正在等待 {user} 完成</translation>
    </message>
    <message>
        <source>Waiting for the {users} to finish</source>
        <translation>正在等待 {users} 完成</translation>
    </message>
    <message>
        <source>a start</source>
        <translation>一次启动</translation>
    </message>
    <message>
        <source>{model} is loaded with other settings and in use by the {users}; it reloads when that is done.</source>
        <translation>{model} 已用其他设置加载，正被 {users} 使用；用完后会重新加载。</translation>
    </message>
    <message>
        <source>Making room for {model}</source>
        <translation>正在为 {model} 腾出空间</translation>
    </message>
    <message>
        <source>Waiting: a request for {model} goes first</source>
        <translation>等待中：{model} 的请求优先</translation>
    </message>
    <message>
        <source>another start</source>
        <translation>另一次启动</translation>
    </message>
    <message>
        <source>a request that waits</source>
        <translation>一个等待中的请求</translation>
    </message>
    <message>
        <source>Waiting for memory: {engine} needs about {need} and the engines in use by the {users} hold {used} of {budget}.</source>
        <translation>正在等待内存：{engine} 约需 {need}，而 {users} 正在使用的引擎占用了 {budget} 中的 {used}。</translation>
    </message>
    <message>
        <source>This repository is gated or private: accept its terms on the hub, then enter an access token.</source>
        <translation>此仓库受限或为私有：请先在 Hugging Face 上接受其条款，然后输入访问令牌。</translation>
    </message>
    <message>
        <source>Check your network or proxy, set a mirror as hub endpoint in Settings, or turn on offline mode.</source>
        <translation>请检查网络或代理，在设置中将镜像设为 hub 端点，或开启离线模式。</translation>
    </message>
    <message>
        <source>The hub needs an access token for {what}.</source>
        <translation>Hugging Face 需要访问令牌才能获取 {what}。</translation>
    </message>
    <message>
        <source>The hub refused access to {what}.</source>
        <translation>Hugging Face 拒绝访问 {what}。</translation>
    </message>
    <message>
        <source>Your token does not grant access: accept the model&apos;s terms on its page or use a token with read access.</source>
        <translation>你的令牌没有访问权限：请在模型页面接受其条款，或使用具有读取权限的令牌。</translation>
    </message>
    <message>
        <source>{what} was not found on the hub ({endpoint}).</source>
        <translation>在 Hugging Face（{endpoint}）上找不到 {what}。</translation>
    </message>
    <message>
        <source>{what} was not found on the hub.</source>
        <translation>在 Hugging Face 上找不到 {what}。</translation>
    </message>
    <message>
        <source>Check the repository and file name (they are case-sensitive).</source>
        <translation>请检查仓库名和文件名（区分大小写）。</translation>
    </message>
    <message>
        <source>The hub could not serve the requested part of {what}.</source>
        <translation>Hugging Face 无法提供 {what} 的所请求部分。</translation>
    </message>
    <message>
        <source>Delete the partial download and start it again.</source>
        <translation>请删除未完成的下载，然后重新开始。</translation>
    </message>
    <message>
        <source>The hub is rate-limiting requests. Retry after {seconds} s.</source>
        <translation>Hugging Face 限制了请求频率。请在 {seconds} 秒后重试。</translation>
    </message>
    <message>
        <source>The hub is rate-limiting requests.</source>
        <translation>Hugging Face 限制了请求频率。</translation>
    </message>
    <message>
        <source>Wait a minute and try again; signing in with a token raises the limit.</source>
        <translation>请等一分钟再试；使用访问令牌登录可提高限额。</translation>
    </message>
    <message>
        <source>The hub had a server error ({status}) for {what}.</source>
        <translation>Hugging Face 在处理 {what} 时出现服务器错误（{status}）。</translation>
    </message>
    <message>
        <source>The hub or your mirror is having trouble; try again later or switch the hub endpoint in Settings.</source>
        <translation>Hugging Face 或你的镜像出现问题；请稍后再试，或在设置中切换 hub 端点。</translation>
    </message>
    <message>
        <source>The hub answered {status} for {what}.</source>
        <translation>Hugging Face 对 {what} 返回了 {status}。</translation>
    </message>
    <message>
        <source>Try again later.</source>
        <translation>请稍后再试。</translation>
    </message>
    <message>
        <source>The hub at {endpoint} did not answer in time.</source>
        <translation>{endpoint} 上的 Hugging Face 未能及时响应。</translation>
    </message>
    <message>
        <source>The hub at {endpoint} sent Strata round in a loop of redirects.</source>
        <translation>{endpoint} 上的 Hugging Face 让 Strata 陷入了重定向循环。</translation>
    </message>
    <message>
        <source>The hub or your mirror is misconfigured; try again later or check the hub endpoint in Settings.</source>
        <translation>Hugging Face 或你的镜像配置有误；请稍后再试，或在设置中检查 hub 端点。</translation>
    </message>
    <message>
        <source>The hub at {endpoint} sent an answer Strata could not decode.</source>
        <translation>{endpoint} 上的 Hugging Face 返回了 Strata 无法解码的响应。</translation>
    </message>
    <message>
        <source>A proxy may be altering the download; try again later or check the hub endpoint in Settings.</source>
        <translation>可能有代理在篡改下载内容；请稍后再试，或在设置中检查 hub 端点。</translation>
    </message>
    <message>
        <source>Could not reach the hub at {endpoint}.</source>
        <translation>无法连接到 {endpoint} 上的 Hugging Face。</translation>
    </message>
    <message>
        <source>Check the hub endpoint in Settings.</source>
        <translation>请在设置中检查 hub 端点。</translation>
    </message>
    <message>
        <source>Resume the download; it continues where it stopped.</source>
        <translation>请继续下载；它会从中断处接着下载。</translation>
    </message>
    <message>
        <source>the list of unfinished downloads</source>
        <translation>未完成下载的列表</translation>
    </message>
    <message>
        <source>Could not save the download queue: {reason}</source>
        <translation>无法保存下载队列：{reason}</translation>
    </message>
    <message>
        <source>A new download must start queued, not {state}.</source>
        <translation>新的下载必须以排队状态开始，而不是 {state}。</translation>
    </message>
    <message>
        <source>The download of {name} cannot go from {old} to {new}.</source>
        <translation>{name} 的下载无法从 {old} 变为 {new}。</translation>
    </message>
    <message>
        <source>The hub at {endpoint} did not describe {path} (ETag, commit or size missing).</source>
        <translation>{endpoint} 上的 Hugging Face 没有描述 {path}（缺少 ETag、提交或大小）。</translation>
    </message>
    <message>
        <source>The endpoint may not be a hub mirror; check the hub endpoint in Settings.</source>
        <translation>该端点可能不是 Hugging Face 镜像；请在设置中检查 hub 端点。</translation>
    </message>
    <message>
        <source>The hub at {endpoint} sent a size that is not a number for {path}.</source>
        <translation>{endpoint} 上的 Hugging Face 为 {path} 返回的大小不是数字。</translation>
    </message>
    <message>
        <source>The hub at {endpoint} did not describe {path}.</source>
        <translation>{endpoint} 上的 Hugging Face 没有描述 {path}。</translation>
    </message>
    <message>
        <source>Downloading {name}</source>
        <translation>正在下载 {name}</translation>
    </message>
    <message>
        <source>Free some space (delete models in the Library tab) or move the hub cache in Settings.</source>
        <translation>请释放一些空间（在“模型库”标签页删除模型），或在设置中移动 hub 缓存。</translation>
    </message>
    <message>
        <source>Cannot write to the hub cache {folder}: {reason}</source>
        <translation>无法写入 hub 缓存 {folder}：{reason}</translation>
    </message>
    <message>
        <source>Choose a writable hub cache folder in Settings.</source>
        <translation>请在设置中选择一个可写的 hub 缓存文件夹。</translation>
    </message>
    <message>
        <source>Unexpected answer {status} for {path}.</source>
        <translation>{path} 收到了意外的响应 {status}。</translation>
    </message>
    <message>
        <source>Not enough disk space: the download needs {needed}, plus {margin} that Strata keeps free so the disk does not fill up; {free} are free.</source>
        <translation>磁盘空间不足：下载需要 {needed}，另需 {margin} 由 Strata 保留为空闲以免磁盘写满；可用 {free}。</translation>
    </message>
    <message>
        <source>The download of {file} stopped at {got} of {size}: the connection dropped.</source>
        <translation>{file} 的下载在 {got}/{size} 处中断：连接已断开。</translation>
    </message>
    <message>
        <source>Writing {file} failed: {reason}</source>
        <translation>写入 {file} 失败：{reason}</translation>
    </message>
    <message>
        <source>Check free space and permissions of the hub cache.</source>
        <translation>请检查 hub 缓存的可用空间和权限。</translation>
    </message>
    <message>
        <source>The download of {file} stopped at {got} of {size}.</source>
        <translation>{file} 的下载在 {got}/{size} 处中断。</translation>
    </message>
    <message>
        <source>{file} is corrupted: its SHA-256 does not match the hub&apos;s.</source>
        <translation>{file} 已损坏：其 SHA-256 与 Hugging Face 上的不一致。</translation>
    </message>
    <message>
        <source>The damaged file was deleted; download it again.</source>
        <translation>损坏的文件已删除；请重新下载。</translation>
    </message>
    <message>
        <source>Could not add {file} to the hub cache: {reason}</source>
        <translation>无法将 {file} 添加到 hub 缓存：{reason}</translation>
    </message>
    <message>
        <source>{engine} engine</source>
        <translation>{engine} 引擎</translation>
    </message>
    <message>
        <source>{engine} image engine</source>
        <translation>{engine} 图像引擎</translation>
    </message>
    <message>
        <source>{engine} embedding engine</source>
        <translation>{engine} 嵌入引擎</translation>
    </message>
    <message>
        <source>{engine} reranker engine</source>
        <translation>{engine} 重排序引擎</translation>
    </message>
    <message>
        <source>{engine} speech engine</source>
        <translation>{engine} 语音引擎</translation>
    </message>
    <message>
        <source>the conversation history</source>
        <translation>对话历史</translation>
    </message>
    <message>
        <source>save to the conversation history</source>
        <translation>保存到对话历史</translation>
    </message>
    <message>
        <source>Not run: Strata closed before it was answered.</source>
        <translation>未运行：在得到答复之前 Strata 已关闭。</translation>
    </message>
    <message>
        <source>Stopped: Strata closed while the tool ran.</source>
        <translation>已停止：工具运行时 Strata 已关闭。</translation>
    </message>
    <message>
        <source>The conversation database was written by a newer Strata (schema {schema}).</source>
        <translation>对话数据库由更新版本的 Strata 写入（架构版本 {schema}）。</translation>
    </message>
    <message>
        <source>Update Strata to open these conversations.</source>
        <translation>请更新 Strata 以打开这些对话。</translation>
    </message>
    <message>
        <source>Could not save to the conversation database: {reason}</source>
        <translation>无法保存到对话数据库：{reason}</translation>
    </message>
    <message>
        <source>Check that the disk is not full and the data folder is writable.</source>
        <translation>请检查磁盘是否已满，以及数据文件夹是否可写。</translation>
    </message>
    <message>
        <source>Could not switch to the other answer: {reason}</source>
        <translation>无法切换到另一个回答：{reason}</translation>
    </message>
    <message>
        <source>The archive is malformed or malicious. Report it to its publisher.</source>
        <translation>该压缩包格式错误或含有恶意内容。请向其发布者报告。</translation>
    </message>
    <message>
        <source>Engine archives only hold files, folders and links.</source>
        <translation>引擎压缩包只应包含文件、文件夹和链接。</translation>
    </message>
    <message>
        <source>{archive} contains a device or special file ({name}); it was not installed.</source>
        <translation>{archive} 包含设备文件或特殊文件（{name}）；未安装。</translation>
    </message>
    <message>
        <source>{archive} contains a name with a NUL byte; it was not installed.</source>
        <translation>{archive} 包含带有 NUL 字节的名称；未安装。</translation>
    </message>
    <message>
        <source>{archive} contains an absolute path ({name}); it was not installed.</source>
        <translation>{archive} 包含绝对路径（{name}）；未安装。</translation>
    </message>
    <message>
        <source>{archive} contains a path leaving its folder ({name}); it was not installed.</source>
        <translation>{archive} 包含指向其文件夹之外的路径（{name}）；未安装。</translation>
    </message>
    <message>
        <source>{archive} contains a link escaping its folder ({member} -&gt; {target}); it was not installed.</source>
        <translation>{archive} 包含指向其文件夹之外的链接（{member} -&gt; {target}）；未安装。</translation>
    </message>
    <message>
        <source>{archive} would unpack to {total} bytes, more than the {most} an engine may take; it was not installed.</source>
        <translation>{archive} 解压后将达到 {total} 字节，超过引擎允许的 {most} 字节；未安装。</translation>
    </message>
    <message>
        <source>{archive} would unpack to {total} bytes from {packed} (a compression bomb); it was not installed.</source>
        <translation>{archive} 会从 {packed} 字节解压成 {total} 字节（压缩炸弹）；未安装。</translation>
    </message>
    <message>
        <source>{archive} holds more than {most} entries; it was not installed.</source>
        <translation>{archive} 包含超过 {most} 个条目；未安装。</translation>
    </message>
    <message>
        <source>{archive} holds {name}, which would unpack to {size} bytes from {packed} (a compression bomb); it was not installed.</source>
        <translation>{archive} 中的 {name} 会从 {packed} 字节解压成 {size} 字节（压缩炸弹）；未安装。</translation>
    </message>
    <message>
        <source>{archive} holds a path Strata cannot resolve ({reason}); it was not installed.</source>
        <translation>{archive} 包含 Strata 无法解析的路径（{reason}）；未安装。</translation>
    </message>
    <message>
        <source>{archive} holds a loop of links; it was not installed.</source>
        <translation>{archive} 包含循环链接；未安装。</translation>
    </message>
    <message>
        <source>{archive} puts {member} under a link to a file; it was not installed.</source>
        <translation>{archive} 将 {member} 放在指向文件的链接之下；未安装。</translation>
    </message>
    <message>
        <source>{archive} puts {member} under a file; it was not installed.</source>
        <translation>{archive} 将 {member} 放在一个文件之下；未安装。</translation>
    </message>
    <message>
        <source>{archive} writes {name} over a link; it was not installed.</source>
        <translation>{archive} 会通过链接写入 {name}；未安装。</translation>
    </message>
    <message>
        <source>{archive} holds {name}, which unpacks to more than it declares; it was not installed.</source>
        <translation>{archive} 中的 {name} 解压后超过其声明的大小；未安装。</translation>
    </message>
    <message>
        <source>{archive} replaces the folder {name} by a link; it was not installed.</source>
        <translation>{archive} 会用链接替换文件夹 {name}；未安装。</translation>
    </message>
    <message>
        <source>{archive} links {name} to {target}, which is not a file in the archive; it was not installed.</source>
        <translation>{archive} 将 {name} 链接到 {target}，但后者不是压缩包中的文件；未安装。</translation>
    </message>
    <message>
        <source>{archive} is not a zip or tar archive.</source>
        <translation>{archive} 不是 zip 或 tar 压缩包。</translation>
    </message>
    <message>
        <source>The catalog matched an asset Strata cannot unpack.</source>
        <translation>目录匹配到了一个 Strata 无法解压的文件。</translation>
    </message>
    <message>
        <source>{archive} is damaged and could not be unpacked ({reason}).</source>
        <translation>{archive} 已损坏，无法解压（{reason}）。</translation>
    </message>
    <message>
        <source>Install again to download a fresh copy.</source>
        <translation>请重新安装以下载新的副本。</translation>
    </message>
    <message>
        <source>{archive} could not be unpacked: {reason}</source>
        <translation>无法解压 {archive}：{reason}</translation>
    </message>
    <message>
        <source>Check free space and permissions of the engines folder.</source>
        <translation>请检查引擎文件夹的可用空间和权限。</translation>
    </message>
    <message>
        <source>Could not write {file}: {reason}</source>
        <translation>无法写入 {file}：{reason}</translation>
    </message>
    <message>
        <source>Check free space and permissions of the downloads folder.</source>
        <translation>请检查下载文件夹的可用空间和权限。</translation>
    </message>
    <message>
        <source>The install manifest in {folder} is damaged ({reason}).</source>
        <translation>{folder} 中的安装清单已损坏（{reason}）。</translation>
    </message>
    <message>
        <source>Remove this engine and install it again.</source>
        <translation>请移除此引擎并重新安装。</translation>
    </message>
    <message>
        <source>{folder} has no readable install manifest ({reason}).</source>
        <translation>{folder} 中没有可读取的安装清单（{reason}）。</translation>
    </message>
    <message>
        <source>Remove this folder and install the engine again.</source>
        <translation>请删除此文件夹并重新安装引擎。</translation>
    </message>
    <message>
        <source>The install manifest in {folder} is damaged.</source>
        <translation>{folder} 中的安装清单已损坏。</translation>
    </message>
    <message>
        <source>The release offers an asset with an unsafe name ({name}); it was not downloaded.</source>
        <translation>该发行版提供的文件名称不安全（{name}）；未下载。</translation>
    </message>
    <message>
        <source>The release server may be malicious or misconfigured. Report it to its publisher.</source>
        <translation>发行服务器可能含有恶意或配置错误。请向其发布者报告。</translation>
    </message>
    <message>
        <source>{backend}: failed: {error}</source>
        <translation>{backend}：失败：{error}</translation>
    </message>
    <message>
        <source>{engine}: usable: {verdict}</source>
        <translation>{engine}：可用：{verdict}</translation>
    </message>
    <message>
        <source>{engine}: unusable here: {verdict}</source>
        <translation>{engine}：在本机不可用：{verdict}</translation>
    </message>
    <message>
        <source>{backend}: skipped</source>
        <translation>{backend}：已跳过</translation>
    </message>
    <message>
        <source>Tried on this machine: {result}. Test it again on the Engines page after a driver update.</source>
        <translation>已在本机试过：{result}。更新驱动后，请在“引擎”页面重新测试。</translation>
    </message>
    <message>
        <source>Not enough disk space for {asset}: it needs about {need}, plus {margin} that Strata keeps free so the disk does not fill up; {folder} has {free} free.</source>
        <translation>{asset} 的磁盘空间不足：约需 {need}，另需 {margin} 由 Strata 保留为空闲以免磁盘写满；{folder} 可用 {free}。</translation>
    </message>
    <message>
        <source>Free some space, or choose another engines folder in Settings.</source>
        <translation>请释放一些空间，或在设置中选择其他引擎文件夹。</translation>
    </message>
    <message>
        <source>There is no {backend} build to install: {reason}</source>
        <translation>没有可安装的 {backend} 版本：{reason}</translation>
    </message>
    <message>
        <source>Downloading {asset}</source>
        <translation>正在下载 {asset}</translation>
    </message>
    <message>
        <source>Unpacking {asset}</source>
        <translation>正在解压 {asset}</translation>
    </message>
    <message>
        <source>The archive holds no {name}; it is not an engine build.</source>
        <translation>压缩包中没有 {name}；它不是引擎版本。</translation>
    </message>
    <message>
        <source>The release may have changed its layout; update Strata&apos;s catalog.</source>
        <translation>该发行版的目录结构可能已改变；请更新 Strata 的目录。</translation>
    </message>
    <message>
        <source>{asset} is missing {files}; the engine would not start, so it was not installed.</source>
        <translation>{asset} 缺少 {files}；引擎将无法启动，因此未安装。</translation>
    </message>
    <message>
        <source>The published archive is incomplete. Try another engine (Vulkan) or a newer release.</source>
        <translation>发布的压缩包不完整。请尝试其他引擎（Vulkan）或更新的版本。</translation>
    </message>
    <message>
        <source>{engine} is an {kind} engine; the pin chooses the chat engine.</source>
        <translation>{engine} 是 {kind} 引擎；固定设置只用于选择聊天引擎。</translation>
    </message>
    <message>
        <source>Image engines are tried ROCm → Vulkan → CPU (strata engines resolve --images).</source>
        <translation>图像引擎按 ROCm → Vulkan → CPU 的顺序尝试（strata engines resolve --images）。</translation>
    </message>
    <message>
        <source>{folder} is not inside Strata&apos;s engines folder; not removing it.</source>
        <translation>{folder} 不在 Strata 的引擎文件夹内；不会删除它。</translation>
    </message>
    <message>
        <source>Could not remove {engine}: {reason}</source>
        <translation>无法删除 {engine}：{reason}</translation>
    </message>
    <message>
        <source>Stop the engine if it is running, then try again.</source>
        <translation>如果引擎正在运行，请先停止它，然后重试。</translation>
    </message>
    <message>
        <source>{folder} holds no {server}.</source>
        <translation>{folder} 中没有 {server}。</translation>
    </message>
    <message>
        <source>Choose the folder your {project} build put {server} in (build/bin).</source>
        <translation>请选择 {project} 构建时存放 {server} 的文件夹（build/bin）。</translation>
    </message>
    <message>
        <source>Unknown backend &apos;{backend}&apos;: choose rocm, vulkan or cpu.</source>
        <translation>未知后端“{backend}”：请选择 rocm、vulkan 或 cpu。</translation>
    </message>
    <message>
        <source>Could not read {path}: {reason}</source>
        <translation>无法读取 {path}：{reason}</translation>
    </message>
    <message>
        <source>{file} carries no generation settings.</source>
        <translation>{file} 没有生成参数。</translation>
    </message>
    <message>
        <source>Only images made by Strata or A1111-compatible tools have them.</source>
        <translation>只有由 Strata 或兼容 A1111 的工具生成的图像才带有生成参数。</translation>
    </message>
    <message>
        <source>Could not save the image in {folder}: {reason}</source>
        <translation>无法将图像保存到 {folder}：{reason}</translation>
    </message>
    <message>
        <source>Check the data folder is writable and the disk is not full.</source>
        <translation>请检查数据文件夹是否可写，以及磁盘是否已满。</translation>
    </message>
    <message>
        <source>Could not delete {name}: {reason}</source>
        <translation>无法删除 {name}：{reason}</translation>
    </message>
    <message>
        <source>{name} is a {kind} model, not a chat model.</source>
        <translation>{name} 是{kind}模型，不是对话模型。</translation>
    </message>
    <message>
        <source>{name} is a {kind} model, not an image model.</source>
        <translation>{name} 是{kind}模型，不是图像模型。</translation>
    </message>
    <message>
        <source>{name} is a {kind} model, not an embedding model.</source>
        <translation>{name} 是{kind}模型，不是嵌入模型。</translation>
    </message>
    <message>
        <source>{name} is a {kind} model, not a speech model.</source>
        <translation>{name} 是{kind}模型，不是语音模型。</translation>
    </message>
    <message>
        <source>{name} is a {kind} model, not a reranker.</source>
        <translation>{name} 是{kind}模型，不是重排序模型。</translation>
    </message>
    <message>
        <source>{name} is a {kind} model, not a {wanted} model.</source>
        <translation>{name} 是{kind}模型，不是{wanted}模型。</translation>
    </message>
    <message>
        <source>This {family} model needs its {parts}: put the file(s) in the same folder (downloads from its repository).</source>
        <translation>此 {family} 模型需要其 {parts}：请将相应文件放在同一文件夹中（可从其仓库下载）。</translation>
    </message>
    <message>
        <source>Not a model Strata can run (a .bin file that is no whisper.cpp speech model).</source>
        <translation>不是 Strata 能运行的模型（这个 .bin 文件不是 whisper.cpp 语音模型）。</translation>
    </message>
    <message>
        <source>Not a model Strata can run (a safetensors file that is no image model).</source>
        <translation>不是 Strata 能运行的模型（一个不是图像模型的 safetensors 文件）。</translation>
    </message>
    <message>
        <source>Split model is missing {missing} of {total} parts: {names}.</source>
        <translation>分片模型缺少 {total} 个部分中的 {missing} 个：{names}。</translation>
    </message>
    <message>
        <source>Check the file is not in use and you may write to its folder.</source>
        <translation>请检查该文件是否正在使用，以及你是否有权写入其所在文件夹。</translation>
    </message>
    <message>
        <source>{path} is not inside the hub cache.</source>
        <translation>{path} 不在 hub 缓存中。</translation>
    </message>
    <message>
        <source>Check the file is not in use by a running model.</source>
        <translation>请检查该文件是否正被运行中的模型使用。</translation>
    </message>
    <message>
        <source>Unknown load option: {names}.</source>
        <translation>未知的加载选项：{names}。</translation>
    </message>
    <message>
        <source>The context size cannot be negative.</source>
        <translation>上下文大小不能为负数。</translation>
    </message>
    <message>
        <source>GPU layers must be &apos;all&apos;, &apos;auto&apos; or a number.</source>
        <translation>GPU 层数必须为“all”、“auto”或一个数字。</translation>
    </message>
    <message>
        <source>Flash attention must be on, off or auto.</source>
        <translation>Flash attention 必须为 on、off 或 auto。</translation>
    </message>
    <message>
        <source>The {which} cache type must be one of {types}.</source>
        <translation>{which} 缓存类型必须是以下之一：{types}。</translation>
    </message>
    <message>
        <source>A quantised V cache needs flash attention: set flash attention to on or auto.</source>
        <translation>量化的 V 缓存需要 flash attention：请将 flash attention 设为 on 或 auto。</translation>
    </message>
    <message>
        <source>Batch sizes, threads and parallel requests cannot be negative.</source>
        <translation>批大小、线程数和并行请求数不能为负数。</translation>
    </message>
    <message>
        <source>The micro-batch cannot be larger than the batch.</source>
        <translation>微批大小不能大于批大小。</translation>
    </message>
    <message>
        <source>Draft limits cannot be negative, and the minimum cannot exceed the maximum.</source>
        <translation>草稿数量上下限不能为负数，且最小值不能超过最大值。</translation>
    </message>
    <message>
        <source>The reply limit cannot be negative (0 means Strata&apos;s default).</source>
        <translation>回复上限不能为负数（0 表示使用 Strata 的默认值）。</translation>
    </message>
    <message>
        <source>Thinking must be auto, on or off.</source>
        <translation>思考必须为 auto、on 或 off。</translation>
    </message>
    <message>
        <source>The thinking effort must be low, medium or high (or empty for the model&apos;s default).</source>
        <translation>思考强度必须为 low、medium 或 high（留空则使用模型的默认值）。</translation>
    </message>
    <message>
        <source>The thinking budget must be a number of tokens, or -1 for no limit.</source>
        <translation>思考预算必须是 token 数量，或为 -1 表示不限制。</translation>
    </message>
    <message>
        <source>the saved load options</source>
        <translation>已保存的加载选项</translation>
    </message>
    <message>
        <source>Could not save the load options: {reason}.</source>
        <translation>无法保存加载选项：{reason}。</translation>
    </message>
    <message>
        <source>The trial of {tag} did not finish: the Strata process that ran it ({pid}) ended during it; {previous} stays in use</source>
        <translation>{tag} 的试用未完成：运行它的 Strata 进程（{pid}）在试用期间结束；继续使用 {previous}</translation>
    </message>
    <message>
        <source>The trial of {tag} did not finish: the Strata process that ran it ended during it; the build in use stays</source>
        <translation>{tag} 的试用未完成：运行它的 Strata 进程在试用期间结束；继续使用当前构建</translation>
    </message>
    <message>
        <source>the engine update ledger</source>
        <translation>引擎更新记录</translation>
    </message>
    <message>
        <source>Could not save the engine update records: {reason}</source>
        <translation>无法保存引擎更新记录：{reason}</translation>
    </message>
    <message>
        <source>Check that {folder} is writable.</source>
        <translation>请检查 {folder} 是否可写。</translation>
    </message>
    <message>
        <source>on trial as an engine update; used once it is promoted</source>
        <translation>正作为引擎更新试用；启用后才会使用</translation>
    </message>
    <message>
        <source>refused as an update: {reason}</source>
        <translation>作为更新被拒绝：{reason}</translation>
    </message>
    <message>
        <source>its trial as an engine update did not finish; the next update tries it again</source>
        <translation>它作为引擎更新的试用未完成；下次更新时会再试</translation>
    </message>
    <message>
        <source>marked bad for this model on this GPU: {reason}</source>
        <translation>已在此 GPU 上被标记为不适用于此模型：{reason}</translation>
    </message>
    <message>
        <source>kept as the last good build; {active} is in use (roll back to use this one)</source>
        <translation>保留为上一个正常的构建；正在使用 {active}（回滚即可使用此构建）</translation>
    </message>
    <message>
        <source>{active} replaced it</source>
        <translation>已被 {active} 取代</translation>
    </message>
    <message>
        <source>This model&apos;s heads hold {head} values, not a multiple of the {cache_type} block ({block}): use f16 for {which}, or turn flash attention off.</source>
        <translation>此模型的每个注意力头有 {head} 个值，不是 {cache_type} 块大小（{block}）的倍数：请对 {which} 使用 f16，或关闭 flash attention。</translation>
    </message>
    <message>
        <source>This model&apos;s heads hold {head} values, not a multiple of the {cache_type} block ({block}): use f16 for {which}.</source>
        <translation>此模型的每个注意力头有 {head} 个值，不是 {cache_type} 块大小（{block}）的倍数：请对 {which} 使用 f16。</translation>
    </message>
    <message>
        <source>Windows could not protect the stored API key.</source>
        <translation>Windows 无法保护已保存的 API 密钥。</translation>
    </message>
    <message>
        <source>The key store {path} cannot be read ({reason}), so no saved API keys or hub token are used.</source>
        <translation>无法读取密钥库 {path}（{reason}），因此不会使用已保存的 API 密钥和 hub 令牌。</translation>
    </message>
    <message>
        <source>not a JSON object of strings</source>
        <translation>不是由字符串组成的 JSON 对象</translation>
    </message>
    <message>
        <source>The key store {store} was damaged ({why}), so the saved API keys and hub token are not used. It was moved to {name}. Enter them again.</source>
        <translation>密钥库 {store} 已损坏（{why}），因此不会使用已保存的 API 密钥和 hub 令牌。该文件已移至 {name}。请重新输入。</translation>
    </message>
    <message>
        <source>The key store {store} was damaged ({why}), so the saved API keys and hub token are not used. Enter them again.</source>
        <translation>密钥库 {store} 已损坏（{why}），因此不会使用已保存的 API 密钥和 hub 令牌。请重新输入。</translation>
    </message>
    <message>
        <source>Could not save the key store {path}: {reason}</source>
        <translation>无法保存密钥存储 {path}：{reason}</translation>
    </message>
    <message>
        <source>Choose a preset file that Strata exported (.json).</source>
        <translation>请选择由 Strata 导出的预设文件（.json）。</translation>
    </message>
    <message>
        <source>This is not a Strata preset (it has no name).</source>
        <translation>这不是 Strata 预设（没有名称）。</translation>
    </message>
    <message>
        <source>A preset needs a name of 1 to {n} characters.</source>
        <translation>预设名称需为 1 到 {n} 个字符。</translation>
    </message>
    <message>
        <source>the list of presets</source>
        <translation>预设列表</translation>
    </message>
    <message>
        <source>The presets file {path} cannot be read.</source>
        <translation>无法读取预设文件 {path}。</translation>
    </message>
    <message>
        <source>There is no preset called “{name}”.</source>
        <translation>没有名为“{name}”的预设。</translation>
    </message>
    <message>
        <source>Saved presets: {names}.</source>
        <translation>已保存的预设：{names}。</translation>
    </message>
    <message>
        <source>Could not save the presets: {reason}</source>
        <translation>无法保存预设：{reason}</translation>
    </message>
    <message>
        <source>Check that the config folder is writable.</source>
        <translation>请检查配置文件夹是否可写。</translation>
    </message>
    <message>
        <source>{file} is too big for a preset.</source>
        <translation>{file} 太大，不是预设。</translation>
    </message>
    <message>
        <source>{file} is not a preset: {reason}</source>
        <translation>{file} 不是预设：{reason}</translation>
    </message>
    <message>
        <source>{file} is not a Strata preset.</source>
        <translation>{file} 不是 Strata 预设。</translation>
    </message>
    <message>
        <source>&apos;{url}&apos; is not a server address.</source>
        <translation>“{url}”不是服务器地址。</translation>
    </message>
    <message>
        <source>Use the form http://host:port or https://host/path.</source>
        <translation>请使用 http://host:port 或 https://host/path 的形式。</translation>
    </message>
    <message>
        <source>The list of remote engines {path} cannot be read.</source>
        <translation>无法读取远程引擎列表 {path}。</translation>
    </message>
    <message>
        <source>Check the file&apos;s permissions.</source>
        <translation>请检查该文件的权限。</translation>
    </message>
    <message>
        <source>The list of remote engines {path} cannot be used ({reason}).</source>
        <translation>远程引擎列表 {path} 无法使用（{reason}）。</translation>
    </message>
    <message>
        <source>Delete the file and add the remote engines again.</source>
        <translation>请删除该文件，然后重新添加远程引擎。</translation>
    </message>
    <message>
        <source>Could not save the remote engines: {reason}</source>
        <translation>无法保存远程引擎：{reason}</translation>
    </message>
    <message>
        <source>No remote engine named &apos;{name}&apos;.</source>
        <translation>没有名为“{name}”的远程引擎。</translation>
    </message>
    <message>
        <source>Add it first (Network page, or `strata remote add`).</source>
        <translation>请先添加它（“网络”页面，或 `strata remote add`）。</translation>
    </message>
    <message>
        <source>Could not reach {name} at {url}.</source>
        <translation>无法连接位于 {url} 的 {name}。</translation>
    </message>
    <message>
        <source>Check the address and that the server is running.</source>
        <translation>请检查地址，并确认服务器正在运行。</translation>
    </message>
    <message>
        <source>{name} rejected the API key.</source>
        <translation>{name} 拒绝了该 API 密钥。</translation>
    </message>
    <message>
        <source>Check the API key of this remote engine on the Network page.</source>
        <translation>请在“网络”页面检查此远程引擎的 API 密钥。</translation>
    </message>
    <message>
        <source>{name} answered {status} to the model list.</source>
        <translation>{name} 对模型列表请求返回了 {status}。</translation>
    </message>
    <message>
        <source>Is this an OpenAI-compatible server (vLLM, SGLang, llama-server)?</source>
        <translation>这是兼容 OpenAI 的服务器吗（vLLM、SGLang、llama-server）？</translation>
    </message>
    <message>
        <source>{name} did not send a model list.</source>
        <translation>{name} 没有返回模型列表。</translation>
    </message>
    <message>
        <source>Is this an OpenAI-compatible server?</source>
        <translation>这是兼容 OpenAI 的服务器吗？</translation>
    </message>
    <message>
        <source>A remote engine needs a name.</source>
        <translation>远程引擎需要一个名称。</translation>
    </message>
    <message>
        <source>Could not add Strata to the programs started at sign-in: {reason}</source>
        <translation>无法将 Strata 添加到登录时启动的程序中：{reason}</translation>
    </message>
    <message>
        <source>Could not remove {path}: {reason}</source>
        <translation>无法删除 {path}：{reason}</translation>
    </message>
    <message>
        <source>Could not remove Strata from the programs started at sign-in: {reason}</source>
        <translation>无法将 Strata 从登录时启动的程序中移除：{reason}</translation>
    </message>
    <message>
        <source>Exposing Strata on the network requires an API key.</source>
        <translation>在网络上开放 Strata 需要 API 密钥。</translation>
    </message>
    <message>
        <source>Generate a key first (Network page or `strata serve --new-key`).</source>
        <translation>请先生成密钥（“网络”页面或 `strata serve --new-key`）。</translation>
    </message>
    <message>
        <source>Starting at sign-in is not available on this system.</source>
        <translation>此系统不支持登录时启动。</translation>
    </message>
    <message>
        <source>Unknown theme &apos;{theme}&apos;.</source>
        <translation>未知主题“{theme}”。</translation>
    </message>
    <message>
        <source>Unknown language &apos;{language}&apos;.</source>
        <translation>未知语言“{language}”。</translation>
    </message>
    <message>
        <source>hub endpoint must start with http:// or https://</source>
        <translation>hub 端点必须以 http:// 或 https:// 开头。</translation>
    </message>
    <message>
        <source>github api url must start with http:// or https://</source>
        <translation>GitHub API 地址必须以 http:// 或 https:// 开头。</translation>
    </message>
    <message>
        <source>github download url must start with http:// or https://</source>
        <translation>GitHub 下载地址必须以 http:// 或 https:// 开头。</translation>
    </message>
    <message>
        <source>flash attention must be on, off or auto</source>
        <translation>flash attention 必须为 on、off 或 auto。</translation>
    </message>
    <message>
        <source>GPU layers must be &apos;all&apos;, &apos;auto&apos; or a number up to {most}</source>
        <translation>GPU 层数必须为“all”、“auto”或不超过 {most} 的数字。</translation>
    </message>
    <message>
        <source>{name} must be between {low} and {high} (it is {value})</source>
        <translation>{name} 必须介于 {low} 和 {high} 之间（当前为 {value}）。</translation>
    </message>
    <message>
        <source>RPC worker &apos;{worker}&apos; must be host:port with a port between 1 and {most}</source>
        <translation>RPC 工作节点“{worker}”必须为 host:port 格式，端口介于 1 和 {most} 之间。</translation>
    </message>
    <message>
        <source>update channel must be stable or latest</source>
        <translation>更新通道必须为 stable 或 latest。</translation>
    </message>
    <message>
        <source>It was moved to {name}.</source>
        <translation>该文件已移至 {name}。</translation>
    </message>
    <message>
        <source>Settings not saved: {problems}</source>
        <translation>设置未保存：{problems}</translation>
    </message>
    <message>
        <source>Your settings file could not be read ({reason}), so defaults are used.</source>
        <translation>无法读取您的设置文件（{reason}），因此使用默认设置。</translation>
    </message>
    <message>
        <source>Your settings were written by a newer Strata (version {version}); defaults are used. The file was kept as {name}.</source>
        <translation>您的设置由较新版本的 Strata 写入（版本 {version}），因此使用默认设置。原文件已保留为 {name}。</translation>
    </message>
    <message>
        <source>Your settings were written by a newer Strata (version {version}); defaults are used. The file was kept as is.</source>
        <translation>您的设置由较新版本的 Strata 写入（版本 {version}），因此使用默认设置。原文件保持不变。</translation>
    </message>
    <message>
        <source>Some settings had invalid values and were reset to their defaults: {names}.</source>
        <translation>部分设置的值无效，已恢复为默认值：{names}。</translation>
    </message>
    <message>
        <source>The file as it was is kept as {name}.</source>
        <translation>原来的文件已保留为 {name}。</translation>
    </message>
    <message>
        <source>Could not save settings to {path}: {reason}</source>
        <translation>无法将设置保存到 {path}：{reason}</translation>
    </message>
    <message>
        <source>Check that the folder exists, is writable and the disk is not full.</source>
        <translation>请检查该文件夹是否存在、是否可写，以及磁盘是否已满。</translation>
    </message>
    <message>
        <source>Unknown setting: {names}</source>
        <translation>未知设置：{names}</translation>
    </message>
    <message>
        <source>Could not {doing}: the database {path} is in use by another program.</source>
        <translation>无法{doing}：数据库 {path} 正被其他程序使用。</translation>
    </message>
    <message>
        <source>Another Strata (or a program that opened the file) is holding it; close it and try again. The file is not damaged.</source>
        <translation>另一个 Strata（或打开了该文件的程序）正在占用它；请关闭后重试。文件没有损坏。</translation>
    </message>
    <message>
        <source>Could not {doing}: the database {path} is damaged ({reason}).</source>
        <translation>无法{doing}：数据库 {path} 已损坏（{reason}）。</translation>
    </message>
    <message>
        <source>Restart Strata: it moves the damaged file aside, keeps it, and starts a new one.</source>
        <translation>请重启 Strata：它会将损坏的文件移到一旁保留，并新建一个数据库。</translation>
    </message>
    <message>
        <source>Could not {doing}: {reason}</source>
        <translation>无法{doing}：{reason}</translation>
    </message>
    <message>
        <source>Cannot create {folder}: {reason}</source>
        <translation>无法创建 {folder}：{reason}</translation>
    </message>
    <message>
        <source>Check that the data folder is writable.</source>
        <translation>请检查数据文件夹是否可写。</translation>
    </message>
    <message>
        <source>open {what}</source>
        <translation>打开{what}</translation>
    </message>
    <message>
        <source>The database {path} is damaged ({damage}) and could not be moved aside: {reason}</source>
        <translation>数据库 {path} 已损坏（{damage}），且无法移到一旁：{reason}</translation>
    </message>
    <message>
        <source>Move or delete the file by hand; Strata then starts a new one.</source>
        <translation>请手动移动或删除该文件；Strata 随后会新建一个。</translation>
    </message>
    <message>
        <source>The database file was damaged ({damage}), so Strata started a new one for {what}. The old file was kept as {moved}.</source>
        <translation>数据库文件已损坏（{damage}），因此 Strata 为{what}新建了一个数据库文件。旧文件已保留为 {moved}。</translation>
    </message>
    <message>
        <source>The pasted configuration</source>
        <translation>粘贴的配置</translation>
    </message>
    <message>
        <source>the list of tool servers</source>
        <translation>工具服务器列表</translation>
    </message>
    <message>
        <source>The list of tool servers {path} cannot be read.</source>
        <translation>无法读取工具服务器列表 {path}。</translation>
    </message>
    <message>
        <source>Could not save the tool servers: {reason}</source>
        <translation>无法保存工具服务器：{reason}</translation>
    </message>
    <message>
        <source>Add it first, or import an mcpServers JSON file.</source>
        <translation>请先添加它，或导入一个 mcpServers JSON 文件。</translation>
    </message>
    <message>
        <source>No speech model is in the library.</source>
        <translation>模型库中没有语音模型。</translation>
    </message>
    <message>
        <source>Download a whisper model (ggml-*.bin) on the Models page (Speech models), or add the folder holding one.</source>
        <translation>在“模型”页（语音模型）下载一个 whisper 模型（ggml-*.bin），或添加包含它的文件夹。</translation>
    </message>
    <message>
        <source>Another Strata, or a program that opened the file, is holding it; the file is not damaged. Close the other program and restart Strata to see and keep your history.</source>
        <translation>另一个 Strata 或打开了该文件的程序正在占用它；文件并未损坏。请关闭该程序并重新启动 Strata，以查看并保留您的历史记录。</translation>
    </message>
    <message>
        <source>Statistics and conversations are not saved this session.</source>
        <translation>本次运行期间不会保存统计数据和对话。</translation>
    </message>
    <message>
        <source>Attached documents are not kept this session.</source>
        <translation>本次会话不保留附加的文档。</translation>
    </message>
    <message>
        <source>Conversations are not saved this session.</source>
        <translation>本次运行期间不会保存对话。</translation>
    </message>
    <message>
        <source>no result</source>
        <translation>没有结果</translation>
    </message>
    <message>
        <source>{engine} could not be measured at depth {depth}: {error}</source>
        <translation>无法在深度 {depth} 测量 {engine}：{error}</translation>
    </message>
    <message>
        <source>{engine} could not be measured: {error}</source>
        <translation>无法测量 {engine}：{error}</translation>
    </message>
    <message>
        <source>No engine finished the benchmark.</source>
        <translation>没有引擎完成基准测试。</translation>
    </message>
    <message>
        <source>{first} is the only engine that ran ({decode:.1f} tokens/s decode).</source>
        <translation>{first} 是唯一运行成功的引擎（解码 {decode:.1f} token/s）。</translation>
    </message>
    <message>
        <source>{first} and {other} decode equally fast ({decode:.1f} vs {other_decode:.1f} tokens/s); {first} prefills faster ({prefill:.0f} vs {other_prefill:.0f} tokens/s).</source>
        <translation>{first} 与 {other} 的解码速度相当（{decode:.1f} 对 {other_decode:.1f} token/s）；{first} 的预填充更快（{prefill:.0f} 对 {other_prefill:.0f} token/s）。</translation>
    </message>
    <message>
        <source>{first} decodes {times:.2f}× as fast as {other} ({decode:.1f} vs {other_decode:.1f} tokens/s).</source>
        <translation>{first} 的解码速度是 {other} 的 {times:.2f} 倍（{decode:.1f} 对 {other_decode:.1f} token/s）。</translation>
    </message>
    <message>
        <source>{first} is fastest.</source>
        <translation>{first} 最快。</translation>
    </message>
    <message>
        <source>Also: {lead}.</source>
        <translation>另外：{lead}。</translation>
    </message>
    <message>
        <source>At {depth} depth {first} decodes fastest ({decode:.1f} vs {other_decode:.1f} tokens/s for {other}).</source>
        <translation>在 {depth} 深度下，{first} 解码最快（{decode:.1f} token/s，{other} 为 {other_decode:.1f} token/s）。</translation>
    </message>
    <message>
        <source>Crossover at about {depth} tokens of context: {before} is faster below, {after} from there.</source>
        <translation>交叉点约在 {depth} 个 token 的上下文处：低于此值时 {before} 更快，从此处起 {after} 更快。</translation>
    </message>
    <message>
        <source>{first} stays fastest at every measured depth.</source>
        <translation>在所有测量的深度下，{first} 都是最快的。</translation>
    </message>
    <message>
        <source>{engine} prefills at {prefill:.0f} tokens/s, far below Vulkan&apos;s {vulkan_prefill:.0f}, and no hipBLASLt tuning table is active: prefill is on the untuned path. Fetch the tuning table for this GPU on the Engines page (or update the engine so its hipBLASLt revision matches the table).</source>
        <translation>{engine} 的预填充速度为 {prefill:.0f} token/s，远低于 Vulkan 的 {vulkan_prefill:.0f}，且没有启用 hipBLASLt 调优表：预填充走的是未调优的路径。请在“引擎”页面获取此 GPU 的调优表（或更新引擎，使其 hipBLASLt 版本与调优表匹配）。</translation>
    </message>
    <message>
        <source>Cannot read {model}.</source>
        <translation>无法读取 {model}。</translation>
    </message>
    <message>
        <source>Check that the model file still exists.</source>
        <translation>请检查模型文件是否仍然存在。</translation>
    </message>
    <message>
        <source>Image benchmarks are not available in this build.</source>
        <translation>此版本不支持图像基准测试。</translation>
    </message>
    <message>
        <source>Could not write {path}: {reason}</source>
        <translation>无法写入 {path}：{reason}</translation>
    </message>
    <message>
        <source>Choose another folder or free some disk space.</source>
        <translation>请选择其他文件夹，或释放一些磁盘空间。</translation>
    </message>
    <message>
        <source>statistics and engine choices</source>
        <translation>统计数据和引擎选择</translation>
    </message>
    <message>
        <source>save the statistics</source>
        <translation>保存统计数据</translation>
    </message>
    <message>
        <source>The statistics were written by a newer Strata.</source>
        <translation>统计数据由较新版本的 Strata 写入。</translation>
    </message>
    <message>
        <source>Update Strata, or move the database file aside.</source>
        <translation>请更新 Strata，或将数据库文件移走。</translation>
    </message>
    <message>
        <source>Benchmark sizes must be at least 1.</source>
        <translation>基准测试的规模至少为 1。</translation>
    </message>
    <message>
        <source>The benchmark depth cannot be negative.</source>
        <translation>基准测试深度不能为负数。</translation>
    </message>
    <message>
        <source>Use 0 to measure at depth 0 only.</source>
        <translation>设为 0 则只在深度 0 测量。</translation>
    </message>
    <message>
        <source>Measured at depth 0 only: {asked:,} tokens of context are more than the model was trained on ({trained:,}) with the workload on top.</source>
        <translation>仅在深度 0 测量：{asked:,} 个 token 的上下文加上测试负载，超过了模型训练时的上下文长度（{trained:,}）。</translation>
    </message>
    <message>
        <source>Measured at depth {depth:,} instead of {asked:,}: the model was trained on {trained:,} tokens of context, and the workload needs room on top.</source>
        <translation>在深度 {depth:,} 而非 {asked:,} 测量：模型训练时的上下文为 {trained:,} 个 token，还需为测试负载留出空间。</translation>
    </message>
    <message>
        <source>No engine to benchmark.</source>
        <translation>没有可测试的引擎。</translation>
    </message>
    <message>
        <source>Install an engine on the Engines page first.</source>
        <translation>请先在“引擎”页面安装一个引擎。</translation>
    </message>
    <message>
        <source>{engine} engine returned no timings.</source>
        <translation>{engine} 引擎没有返回计时数据。</translation>
    </message>
    <message>
        <source>{engine} re-read {read} prompt tokens instead of {expected}: the filled context was not kept, so depth {depth} was not measured.</source>
        <translation>{engine} 重新读取了 {read} 个提示 token，而不是 {expected} 个：已填充的上下文没有保留，因此未能测量深度 {depth}。</translation>
    </message>
    <message>
        <source>The engine could not tokenize the benchmark prompt.</source>
        <translation>引擎无法对基准测试提示词进行分词。</translation>
    </message>
    <message>
        <source>The engine returned no timings for the benchmark request.</source>
        <translation>引擎没有返回基准测试请求的计时数据。</translation>
    </message>
    <message>
        <source>The engine stopped answering during the benchmark ({reason}).</source>
        <translation>引擎在基准测试期间停止响应（{reason}）。</translation>
    </message>
    <message>
        <source>The engine refused the benchmark request (HTTP {status}).</source>
        <translation>引擎拒绝了基准测试请求（HTTP {status}）。</translation>
    </message>
    <message>
        <source>The engine sent an unreadable answer.</source>
        <translation>引擎返回了无法读取的应答。</translation>
    </message>
    <message>
        <source>The engine sent an unexpected answer.</source>
        <translation>引擎返回了意外的应答。</translation>
    </message>
    <message>
        <source>{gpu}: not in table → {fallback}; ROCm will be probed if you install it</source>
        <translation>{gpu}：不在对照表中 → {fallback}；如果您安装 ROCm，会对其进行检测</translation>
    </message>
    <message>
        <source>{gfx} → family {family}</source>
        <translation>{gfx} → 系列 {family}</translation>
    </message>
    <message>
        <source>{gfx} (family {family}) is among this build&apos;s targets</source>
        <translation>{gfx}（系列 {family}）在此构建的目标之中</translation>
    </message>
    <message>
        <source>{gfx} is among this build&apos;s targets</source>
        <translation>{gfx} 在此构建的目标之中</translation>
    </message>
    <message>
        <source>{gfx} (family {family}): no ROCm build for {os} in the current releases → {fallback}</source>
        <translation>{gfx}（系列 {family}）：当前发布版本中没有适用于 {os} 的 ROCm 构建 → {fallback}</translation>
    </message>
    <message>
        <source>{gfx}: no ROCm build for this target → {fallback}</source>
        <translation>{gfx}：没有针对此目标的 ROCm 构建 → {fallback}</translation>
    </message>
    <message>
        <source>no GPU found → CPU</source>
        <translation>未找到 GPU → CPU</translation>
    </message>
    <message>
        <source>no {backend} build for {os} in the current releases</source>
        <translation>当前发布版本中没有适用于 {os} 的 {backend} 构建</translation>
    </message>
    <message>
        <source>works on any GPU with a Vulkan driver</source>
        <translation>适用于任何装有 Vulkan 驱动的 GPU</translation>
    </message>
    <message>
        <source>last resort: runs on the processor (several times slower)</source>
        <translation>最后的选择：在处理器上运行（慢数倍）</translation>
    </message>
    <message>
        <source>No release listings available: connect once, or pass --releases-json files.</source>
        <translation>没有可用的发布列表：请联网一次，或传入 --releases-json 文件。</translation>
    </message>
    <message>
        <source>a required DLL was not found (STATUS_DLL_NOT_FOUND)</source>
        <translation>找不到所需的 DLL（STATUS_DLL_NOT_FOUND）</translation>
    </message>
    <message>
        <source>a DLL is for the wrong architecture or damaged (STATUS_INVALID_IMAGE_FORMAT)</source>
        <translation>某个 DLL 的架构不符或已损坏（STATUS_INVALID_IMAGE_FORMAT）</translation>
    </message>
    <message>
        <source>a DLL lacks a function this build needs (STATUS_ENTRYPOINT_NOT_FOUND)</source>
        <translation>某个 DLL 缺少此构建所需的函数（STATUS_ENTRYPOINT_NOT_FOUND）</translation>
    </message>
    <message>
        <source>did not answer within {seconds:.0f} s</source>
        <translation>{seconds:.0f} 秒内没有响应</translation>
    </message>
    <message>
        <source>runs on the processor</source>
        <translation>在处理器上运行</translation>
    </message>
    <message>
        <source>won&apos;t start: {reason}</source>
        <translation>无法启动：{reason}</translation>
    </message>
    <message>
        <source>{server} is missing</source>
        <translation>{server} 不存在</translation>
    </message>
    <message>
        <source>exit code {code}</source>
        <translation>退出码 {code}</translation>
    </message>
    <message>
        <source>device list not run</source>
        <translation>未运行设备列表</translation>
    </message>
    <message>
        <source>could not list devices: {reason}</source>
        <translation>无法列出设备：{reason}</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>sees no {kind} device (devices seen: {seen})</source>
        <translation>未发现 {kind} 设备（发现的设备：{seen}）</translation>
    </message>
    <message>
        <source>sees {devices} — a software renderer on the CPU, not your GPU</source>
        <translation>看到的是 {devices} —— 这是在 CPU 上运行的软件渲染器，不是你的 GPU</translation>
    </message>
    <message>
        <source>sees {devices}</source>
        <translation>发现 {devices}</translation>
    </message>
    <message>
        <source>starts (its GPU is checked when a model loads)</source>
        <translation>可以启动（加载模型时再检查其 GPU）</translation>
    </message>
    <message>
        <source>Strata is already running (process {pid}) but did not answer.</source>
        <translation>Strata 已在运行（进程 {pid}），但没有响应。</translation>
    </message>
    <message>
        <source>Wait for its window, or close it (end it in Task Manager, or `kill` it), then start Strata again.</source>
        <translation>请等待它的窗口出现，或将其关闭（在任务管理器中结束它，或用 `kill`），然后再次启动 Strata。</translation>
    </message>
    <message>
        <source>{engine} is pinned; a pinned build is never replaced</source>
        <translation>{engine} 已固定；已固定的构建永远不会被替换</translation>
    </message>
    <message>
        <source>it was refused before ({reason})</source>
        <translation>它之前已被拒绝（{reason}）</translation>
    </message>
    <message>
        <source>{engine} is pinned; a pinned build is never replaced.</source>
        <translation>{engine} 已固定；已固定的构建永远不会被替换。</translation>
    </message>
    <message>
        <source>Unpin it (strata engines pin) to let updates replace it.</source>
        <translation>取消固定（strata engines pin）后，更新才能替换它。</translation>
    </message>
    <message>
        <source>Installing {tag} beside {current}</source>
        <translation>正在安装 {tag}（与 {current} 并存）</translation>
    </message>
    <message>
        <source>Checking {tag} on this machine</source>
        <translation>正在本机检查 {tag}</translation>
    </message>
    <message>
        <source>{tag} does not run on {where}: {reason}</source>
        <translation>{tag} 无法在{where}上运行：{reason}</translation>
    </message>
    <message>
        <source>{tag} was not tried: there is no chat model in your library to try it with; kept {current}</source>
        <translation>未试用 {tag}：你的模型库中没有可用于试用的聊天模型；继续使用 {current}</translation>
    </message>
    <message>
        <source>{reason}; kept {current}</source>
        <translation>{reason}；继续使用 {current}</translation>
    </message>
    <message>
        <source>{tag} passed its trial on {where} {figures}; not promoted (trial only), kept {current}</source>
        <translation>{tag} 已在{where}上通过试用{figures}；未启用（仅试用），继续使用 {current}</translation>
    </message>
    <message>
        <source>{tag} passed its trial on {where}; not promoted (trial only), kept {current}</source>
        <translation>{tag} 已在{where}上通过试用；未启用（仅试用），继续使用 {current}</translation>
    </message>
    <message>
        <source>{tag} replaced {current} on {where} {figures}; {current} is kept to roll back to</source>
        <translation>{tag} 已在{where}上取代 {current}{figures}；{current} 已保留以便回滚</translation>
    </message>
    <message>
        <source>{tag} replaced {current} on {where}; {current} is kept to roll back to</source>
        <translation>{tag} 已在{where}上取代 {current}；{current} 已保留以便回滚</translation>
    </message>
    <message>
        <source>on trial as an update of {current}</source>
        <translation>作为 {current} 的更新试用中</translation>
    </message>
    <message>
        <source>the build in use</source>
        <translation>正在使用的构建</translation>
    </message>
    <message>
        <source>not newer than {current}, the build in use</source>
        <translation>不比正在使用的构建 {current} 更新</translation>
    </message>
    <message>
        <source>Strata is trying the engine update {tag} on this machine (a few minutes at most); the chat continues once it is done.</source>
        <translation>Strata 正在本机试用引擎更新 {tag}（最多几分钟）；完成后聊天会继续。</translation>
    </message>
    <message>
        <source>Measuring {tag} with {model}</source>
        <translation>正在用 {model} 测量 {tag}</translation>
    </message>
    <message>
        <source>{current} (the build in use) could not be measured with {model} ({error}), so {tag} cannot be compared</source>
        <translation>无法用 {model} 测量 {current}（正在使用的构建）（{error}），因此无法与 {tag} 比较</translation>
    </message>
    <message>
        <source>Loading {model} on {tag}</source>
        <translation>正在用 {tag} 加载 {model}</translation>
    </message>
    <message>
        <source>{tag} failed with {model} on {where}: {error}</source>
        <translation>{tag} 在{where}上运行 {model} 失败：{error}</translation>
    </message>
    <message>
        <source>Checking {tag}&apos;s replies with {model}&apos;s template</source>
        <translation>正在用 {model} 的模板检查 {tag} 的回复</translation>
    </message>
    <message>
        <source>{tag} broke {model}&apos;s replies: {problem}</source>
        <translation>{tag} 破坏了 {model} 的回复：{problem}</translation>
    </message>
    <message>
        <source>{tag} prefilled {slower:.0f} % slower than {current} on {where} with {model} ({new:.1f} vs {old:.1f} tokens/s; the tolerance is {tolerance} %)</source>
        <translation>{tag} 在{where}上使用 {model} 时，预填充比 {current} 慢 {slower:.0f} %（{new:.1f} 对 {old:.1f} token/s；容差为 {tolerance} %）</translation>
    </message>
    <message>
        <source>{tag} decoded {slower:.0f} % slower than {current} on {where} with {model} ({new:.1f} vs {old:.1f} tokens/s; the tolerance is {tolerance} %)</source>
        <translation>{tag} 在{where}上使用 {model} 时，解码比 {current} 慢 {slower:.0f} %（{new:.1f} 对 {old:.1f} token/s；容差为 {tolerance} %）</translation>
    </message>
    <message>
        <source>(best repetitions: prefill {prefill:.1f} vs {current_prefill:.1f} tokens/s, decode {decode:.1f} vs {current_decode:.1f})</source>
        <translation>（最佳重复：预填充 {prefill:.1f} 对 {current_prefill:.1f} token/s，解码 {decode:.1f} 对 {current_decode:.1f}）</translation>
    </message>
    <message>
        <source>the reply was empty</source>
        <translation>回复为空</translation>
    </message>
    <message>
        <source>no reply</source>
        <translation>没有回复</translation>
    </message>
    <message>
        <source>Strata was stopped ({how}) during it</source>
        <translation>Strata 在此期间被停止（{how}）</translation>
    </message>
    <message>
        <source>it was cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>The trial of {tag} did not finish: {why}; kept {current}</source>
        <translation>{tag} 的试用未完成：{why}；保留 {current}</translation>
    </message>
    <message>
        <source>your {gpu}</source>
        <translation>你的 {gpu}</translation>
    </message>
    <message>
        <source>this machine</source>
        <translation>本机</translation>
    </message>
    <message>
        <source>No engine &apos;{engine}&apos; is installed.</source>
        <translation>没有安装引擎“{engine}”。</translation>
    </message>
    <message>
        <source>See `strata engines list`.</source>
        <translation>请查看 `strata engines list`。</translation>
    </message>
    <message>
        <source>There is no earlier build to roll back to.</source>
        <translation>没有可回滚到的早期构建。</translation>
    </message>
    <message>
        <source>Strata keeps the last good build of each kind after an update promotes a new one.</source>
        <translation>更新启用新构建后，Strata 会为每一类引擎保留上一个正常的构建。</translation>
    </message>
    <message>
        <source>Rolled back to {old} from {new} on {where}</source>
        <translation>已在{where}上从 {new} 回滚到 {old}</translation>
    </message>
    <message>
        <source>Rolled back to {old} on {where}</source>
        <translation>已在{where}上回滚到 {old}</translation>
    </message>
    <message>
        <source>{new} could not load {model}, which {old} loaded; rolled back to {old} and marked {new} bad for this model on {where}</source>
        <translation>{new} 无法加载 {old} 曾加载过的 {model}；已回滚到 {old}，并在{where}上将 {new} 标记为不适用于此模型</translation>
    </message>
    <message>
        <source>This conversation no longer exists.</source>
        <translation>此对话已不存在。</translation>
    </message>
    <message>
        <source>There is no message to answer yet.</source>
        <translation>还没有可以回复的消息。</translation>
    </message>
    <message>
        <source>Only your own messages can be edited.</source>
        <translation>只能编辑你自己的消息。</translation>
    </message>
    <message>
        <source>The image</source>
        <translation>该图片</translation>
    </message>
    <message>
        <source>{image} is empty.</source>
        <translation>{image}是空的。</translation>
    </message>
    <message>
        <source>{image} is larger than {size} MB.</source>
        <translation>{image}大于 {size} MB。</translation>
    </message>
    <message>
        <source>Attach a smaller picture or a screenshot of the part that matters.</source>
        <translation>请附加更小的图片，或只截取重要部分的截图。</translation>
    </message>
    <message>
        <source>{image} is not a PNG, JPEG, GIF or BMP image.</source>
        <translation>{image}不是 PNG、JPEG、GIF 或 BMP 图片。</translation>
    </message>
    <message>
        <source>Convert it to PNG or JPEG first.</source>
        <translation>请先将其转换为 PNG 或 JPEG。</translation>
    </message>
    <message>
        <source>Cannot read {path}: {reason}</source>
        <translation>无法读取 {path}：{reason}</translation>
    </message>
    <message>
        <source>This model</source>
        <translation>此模型</translation>
    </message>
    <message>
        <source>{model} cannot see images: no vision projector (mmproj) was found next to it.</source>
        <translation>{model} 无法识别图片：在它旁边没有找到视觉投影器（mmproj）。</translation>
    </message>
    <message>
        <source>Download a vision model from the Models page (its projector comes with it), or put its mmproj-*.gguf file in the model&apos;s folder.</source>
        <translation>请在“模型”页面下载视觉模型（会一并下载其投影器），或将它的 mmproj-*.gguf 文件放到模型所在的文件夹。</translation>
    </message>
    <message>
        <source>Cannot read the model file: {reason}.</source>
        <translation>无法读取模型文件：{reason}。</translation>
    </message>
    <message>
        <source>Choose the model again in the header.</source>
        <translation>请在顶部重新选择模型。</translation>
    </message>
    <message>
        <source>No model chosen.</source>
        <translation>尚未选择模型。</translation>
    </message>
    <message>
        <source>Pick a GGUF model in the header first.</source>
        <translation>请先在顶部选择一个 GGUF 模型。</translation>
    </message>
    <message>
        <source>No engine to run the model.</source>
        <translation>没有可运行该模型的引擎。</translation>
    </message>
    <message>
        <source>Install an engine on the Engines page.</source>
        <translation>请在“引擎”页面安装引擎。</translation>
    </message>
    <message>
        <source>Not run: this reply reached its limit of {rounds} rounds of tool calls.</source>
        <translation>未运行：此回复已达到 {rounds} 轮工具调用的上限。</translation>
    </message>
    <message>
        <source>Not run: stopped by the user.</source>
        <translation>未运行：已被用户停止。</translation>
    </message>
    <message>
        <source>Stopped by the user before the tool finished.</source>
        <translation>工具完成之前已被用户停止。</translation>
    </message>
    <message>
        <source>{error} The partial reply was kept.</source>
        <translation>{error} 已保留部分回复。</translation>
    </message>
    <message>
        <source>Send again to restart the engine.</source>
        <translation>再次发送即可重新启动引擎。</translation>
    </message>
    <message>
        <source>A remote engine&apos;s chat-format parsing cannot be changed from here.</source>
        <translation>远程引擎的聊天格式解析无法在这里更改。</translation>
    </message>
    <message>
        <source>Change it on the server that runs the model.</source>
        <translation>请在运行该模型的服务器上更改。</translation>
    </message>
    <message>
        <source>The conversation was deleted while its reply was written.</source>
        <translation>回复生成期间，该对话已被删除。</translation>
    </message>
    <message>
        <source>Cannot lend this computer on {address}: {reason}</source>
        <translation>无法在 {address} 上出借本机：{reason}</translation>
    </message>
    <message>
        <source>Another program (or another RPC server) uses this port; choose another one.</source>
        <translation>另一个程序（或另一个 RPC 服务器）正在使用此端口；请换一个端口。</translation>
    </message>
    <message>
        <source>Could not start {program}: {reason}</source>
        <translation>无法启动 {program}：{reason}</translation>
    </message>
    <message>
        <source>Reinstall the engine on the Engines page.</source>
        <translation>请在“引擎”页面重新安装该引擎。</translation>
    </message>
    <message>
        <source>The RPC server did not start listening.</source>
        <translation>RPC 服务器没有开始监听。</translation>
    </message>
    <message>
        <source>The RPC server stopped at once (exit code {code}).</source>
        <translation>RPC 服务器启动后立即停止（退出代码 {code}）。</translation>
    </message>
    <message>
        <source>Is port {port} already in use, or the device name wrong?</source>
        <translation>端口 {port} 是否已被占用，或者设备名称有误？</translation>
    </message>
    <message>
        <source>The schema is not valid JSON: {error}</source>
        <translation>该 schema 不是有效的 JSON：{error}</translation>
    </message>
    <message>
        <source>Write the schema as a JSON object, e.g. {&quot;type&quot;: &quot;object&quot;}.</source>
        <translation>请把 schema 写成 JSON 对象，例如 {&quot;type&quot;: &quot;object&quot;}。</translation>
    </message>
    <message>
        <source>The schema must be a JSON object.</source>
        <translation>schema 必须是 JSON 对象。</translation>
    </message>
    <message>
        <source>The schema is not valid: {where}: {reason}</source>
        <translation>该 schema 无效：{where}：{reason}</translation>
    </message>
    <message>
        <source>See json-schema.org for the keywords a schema may use.</source>
        <translation>schema 可用的关键字请参阅 json-schema.org。</translation>
    </message>
    <message>
        <source>This engine is already running.</source>
        <translation>此引擎已在运行。</translation>
    </message>
    <message>
        <source>Refusing to serve on {host} without an API key.</source>
        <translation>没有 API 密钥时拒绝在 {host} 上提供服务。</translation>
    </message>
    <message>
        <source>Other computers could use your GPU freely: generate an API key first.</source>
        <translation>其他计算机将可以随意使用你的 GPU：请先生成 API 密钥。</translation>
    </message>
    <message>
        <source>Cannot listen on {host}:{port}: {reason}</source>
        <translation>无法在 {host}:{port} 上监听：{reason}</translation>
    </message>
    <message>
        <source>Another program may use this port; choose another one.</source>
        <translation>可能有其他程序正在使用此端口；请换一个端口。</translation>
    </message>
    <message>
        <source>The engine catalog has no source &apos;{source}&apos;.</source>
        <translation>引擎目录中没有来源“{source}”。</translation>
    </message>
    <message>
        <source>The engine catalog {path} could not be read: {reason}</source>
        <translation>无法读取引擎目录 {path}：{reason}</translation>
    </message>
    <message>
        <source>Reinstall Strata; the catalog ships with it.</source>
        <translation>请重新安装 Strata；目录随 Strata 一起提供。</translation>
    </message>
    <message>
        <source>The engine catalog {path} is not valid JSON: {error}</source>
        <translation>引擎目录 {path} 不是有效的 JSON：{error}</translation>
    </message>
    <message>
        <source>Reinstall Strata or fix the file.</source>
        <translation>请重新安装 Strata 或修复该文件。</translation>
    </message>
    <message>
        <source>Engine catalog {origin}: {where}: {problem}</source>
        <translation>引擎目录 {origin}：{where}：{problem}</translation>
    </message>
    <message>
        <source>The catalog is data shipped with Strata; fix or reinstall it.</source>
        <translation>该目录是随 Strata 提供的数据；请修复或重新安装。</translation>
    </message>
    <message>
        <source>Could not read release JSON {path}: {error}</source>
        <translation>无法读取发行版 JSON {path}：{error}</translation>
    </message>
    <message>
        <source>{path} does not look like GitHub release JSON (no asset URLs).</source>
        <translation>{path} 看起来不是 GitHub 发行版 JSON（没有文件地址）。</translation>
    </message>
    <message>
        <source>Save the output of GET /repos/OWNER/NAME/releases.</source>
        <translation>请保存 GET /repos/OWNER/NAME/releases 的输出。</translation>
    </message>
    <message>
        <source>Could not list the releases of {repo}: {reason}</source>
        <translation>无法列出 {repo} 的发行版本：{reason}</translation>
    </message>
    <message>
        <source>Connect to the internet (or turn off offline mode) once; the listing is then cached.</source>
        <translation>请联网一次（或关闭离线模式）；之后发行列表会被缓存。</translation>
    </message>
    <message>
        <source>{repo}: the release listing is not understood ({error}).</source>
        <translation>{repo}：无法解析发行列表（{error}）。</translation>
    </message>
    <message>
        <source>offline mode is on</source>
        <translation>离线模式已开启</translation>
    </message>
    <message>
        <source>could not reach {host}</source>
        <translation>无法连接 {host}</translation>
    </message>
    <message>
        <source>GitHub answered {status} for the releases of {repo}.</source>
        <translation>GitHub 对 {repo} 的发行版本请求返回了 {status}。</translation>
    </message>
    <message>
        <source>Check the API address in Settings, or try again later.</source>
        <translation>请在设置中检查 API 地址，或稍后再试。</translation>
    </message>
    <message>
        <source>{repo}: the release listing is not JSON.</source>
        <translation>{repo}：发行列表不是 JSON。</translation>
    </message>
    <message>
        <source>GitHub&apos;s request limit is used up; try again after {time}.</source>
        <translation>GitHub 的请求次数已用完；请在 {time} 之后再试。</translation>
    </message>
    <message>
        <source>GitHub&apos;s request limit is used up; try again in an hour.</source>
        <translation>GitHub 的请求次数已用完；请一小时后再试。</translation>
    </message>
    <message>
        <source>Unauthenticated clients get 60 requests per hour. Cached listings are still used when offline mode is on.</source>
        <translation>未登录的客户端每小时可发送 60 个请求。开启离线模式时仍会使用已缓存的列表。</translation>
    </message>
    <message>
        <source>A server did not answer in time.</source>
        <translation>服务器未能及时响应。</translation>
    </message>
    <message>
        <source>Check your network or proxy and try again.</source>
        <translation>请检查网络或代理，然后重试。</translation>
    </message>
    <message>
        <source>A server sent Strata round in a loop of redirects.</source>
        <translation>服务器让 Strata 陷入了重定向循环。</translation>
    </message>
    <message>
        <source>The server is misconfigured; try again later.</source>
        <translation>服务器配置有误；请稍后再试。</translation>
    </message>
    <message>
        <source>A server sent an answer Strata could not decode.</source>
        <translation>服务器返回了 Strata 无法解码的响应。</translation>
    </message>
    <message>
        <source>A proxy may be altering the traffic; try again later or from another network.</source>
        <translation>可能有代理在篡改网络流量；请稍后再试，或换一个网络。</translation>
    </message>
    <message>
        <source>A server sent Strata to an address it cannot use.</source>
        <translation>服务器将 Strata 引向了一个无法使用的地址。</translation>
    </message>
    <message>
        <source>Check the endpoint in Settings; the server may be misconfigured.</source>
        <translation>请在设置中检查端点；服务器可能配置有误。</translation>
    </message>
    <message>
        <source>A network request failed.</source>
        <translation>网络请求失败。</translation>
    </message>
    <message>
        <source>{origin} is not a GPU snapshot (invalid JSON at line {line}).</source>
        <translation>{origin} 不是 GPU 快照（第 {line} 行的 JSON 无效）。</translation>
    </message>
    <message>
        <source>Use a file written by &apos;strata gpu --capture FILE&apos; or a copied system report.</source>
        <translation>请使用由“strata gpu --capture FILE”写出的文件，或复制的系统报告。</translation>
    </message>
    <message>
        <source>{origin} is not a Strata GPU snapshot.</source>
        <translation>{origin} 不是 Strata GPU 快照。</translation>
    </message>
    <message>
        <source>{origin} is a GPU snapshot this Strata version cannot read (version {version}, platform {platform}).</source>
        <translation>{origin} 是此版本 Strata 无法读取的 GPU 快照（版本 {version}，平台 {platform}）。</translation>
    </message>
    <message>
        <source>Update Strata, or capture the snapshot again with this version.</source>
        <translation>请更新 Strata，或用此版本重新捕获快照。</translation>
    </message>
    <message>
        <source>Could not read the GPU snapshot {path}: {reason}</source>
        <translation>无法读取 GPU 快照 {path}：{reason}</translation>
    </message>
    <message>
        <source>Check the path.</source>
        <translation>请检查路径。</translation>
    </message>
    <message>
        <source>{origin}: the Linux snapshot has no files.</source>
        <translation>{origin}：该 Linux 快照中没有文件。</translation>
    </message>
    <message>
        <source>Capture it again with &apos;strata gpu --capture FILE&apos;.</source>
        <translation>请用“strata gpu --capture FILE”重新捕获。</translation>
    </message>
    <message>
        <source>The sysfs root {path} is not a folder.</source>
        <translation>sysfs 根目录 {path} 不是文件夹。</translation>
    </message>
    <message>
        <source>Point --sysfs-root at a captured tree (it contains sys/class/drm).</source>
        <translation>请将 --sysfs-root 指向捕获的目录树（其中包含 sys/class/drm）。</translation>
    </message>
    <message>
        <source>The prompt is empty.</source>
        <translation>提示词为空。</translation>
    </message>
    <message>
        <source>Describe the image to make.</source>
        <translation>请描述要生成的图像。</translation>
    </message>
    <message>
        <source>The image width {side} is not possible.</source>
        <translation>图像宽度 {side} 不可用。</translation>
    </message>
    <message>
        <source>The image height {side} is not possible.</source>
        <translation>图像高度 {side} 不可用。</translation>
    </message>
    <message>
        <source>Use a multiple of 8 between 64 and {max} pixels (some models round up to a multiple of 64; Strata says so when they do).</source>
        <translation>请使用 64 到 {max} 像素之间 8 的倍数（有些模型会向上取整到 64 的倍数；出现这种情况时 Strata 会提示）。</translation>
    </message>
    <message>
        <source>{count} steps is not possible.</source>
        <translation>{count} 步不可用。</translation>
    </message>
    <message>
        <source>Use 1 to 500 steps.</source>
        <translation>请使用 1 到 500 步。</translation>
    </message>
    <message>
        <source>{count} images at once is not possible.</source>
        <translation>无法一次生成 {count} 张图像。</translation>
    </message>
    <message>
        <source>Make 1 to 64 images.</source>
        <translation>请生成 1 到 64 张图像。</translation>
    </message>
    <message>
        <source>A CFG scale of {scale} is not possible.</source>
        <translation>CFG 比例 {scale} 不可用。</translation>
    </message>
    <message>
        <source>Use 0 to 100 (7 is usual).</source>
        <translation>请使用 0 到 100（通常为 7）。</translation>
    </message>
    <message>
        <source>The image carries no generation settings Strata can read.</source>
        <translation>该图像没有 Strata 能读取的生成参数。</translation>
    </message>
    <message>
        <source>The image&apos;s generation settings are damaged ({reason}).</source>
        <translation>该图像的生成参数已损坏（{reason}）。</translation>
    </message>
    <message>
        <source>&apos;{text}&apos; is not an image size.</source>
        <translation>“{text}”不是图像尺寸。</translation>
    </message>
    <message>
        <source>Write it as WIDTHxHEIGHT, for example 512x512.</source>
        <translation>请写成 WIDTHxHEIGHT 的形式，例如 512x512。</translation>
    </message>
    <message>
        <source>The file is not a PNG image.</source>
        <translation>该文件不是 PNG 图像。</translation>
    </message>
    <message>
        <source>The PNG image is truncated.</source>
        <translation>该 PNG 图像不完整。</translation>
    </message>
    <message>
        <source>The PNG image has no header.</source>
        <translation>该 PNG 图像没有文件头。</translation>
    </message>
    <message>
        <source>The image engine refused the request: {reason}.</source>
        <translation>图像引擎拒绝了该请求：{reason}。</translation>
    </message>
    <message>
        <source>Check the size, steps and sampler.</source>
        <translation>请检查尺寸、步数和采样器。</translation>
    </message>
    <message>
        <source>The image engine could not make the image: {reason}.</source>
        <translation>图像引擎无法生成该图像：{reason}。</translation>
    </message>
    <message>
        <source>The engine log has details.</source>
        <translation>引擎日志中有详细信息。</translation>
    </message>
    <message>
        <source>The image engine stopped answering ({reason}).</source>
        <translation>图像引擎停止了响应（{reason}）。</translation>
    </message>
    <message>
        <source>Try again; the engine log has details.</source>
        <translation>请重试；引擎日志中有详细信息。</translation>
    </message>
    <message>
        <source>Download the file again.</source>
        <translation>请重新下载该文件。</translation>
    </message>
    <message>
        <source>The download failed.</source>
        <translation>下载失败。</translation>
    </message>
    <message>
        <source>There is no download {job} in the queue.</source>
        <translation>队列中没有下载任务 {job}。</translation>
    </message>
    <message>
        <source>Downloads have stopped: Strata is closing.</source>
        <translation>下载已停止：Strata 正在关闭。</translation>
    </message>
    <message>
        <source>The download of {name} was cancelled.</source>
        <translation>{name} 的下载已取消。</translation>
    </message>
    <message>
        <source>The download of {name} was paused.</source>
        <translation>{name} 的下载已暂停。</translation>
    </message>
    <message>
        <source>Resume it on the Models page; it continues where it stopped.</source>
        <translation>请在“模型”页面继续下载；它会从中断处接着下载。</translation>
    </message>
    <message>
        <source>{file} has no vocabulary.</source>
        <translation>{file} 没有词表。</translation>
    </message>
    <message>
        <source>Choose a language model in GGUF format.</source>
        <translation>请选择 GGUF 格式的语言模型。</translation>
    </message>
    <message>
        <source>The draft model {name} was not found.</source>
        <translation>未找到草稿模型 {name}。</translation>
    </message>
    <message>
        <source>Choose the draft model again.</source>
        <translation>请重新选择草稿模型。</translation>
    </message>
    <message>
        <source>{draft_tokenizer} tokenizer, {draft_size:,} tokens vs {tokenizer}, {size:,}</source>
        <translation>{draft_tokenizer} 分词器，{draft_size:,} 个 token，对比 {tokenizer}，{size:,} 个</translation>
    </message>
    <message>
        <source>the same number of tokens, but different ones</source>
        <translation>token 数量相同，但内容不同</translation>
    </message>
    <message>
        <source>{draft} cannot draft for {model}: its vocabulary differs ({what}).</source>
        <translation>{draft} 无法为 {model} 做草稿模型：两者词表不同（{what}）。</translation>
    </message>
    <message>
        <source>Pick a smaller model of the same family (same tokenizer), e.g. a 0.5B for a 7B.</source>
        <translation>请选择同一系列（相同分词器）的较小模型，例如为 7B 模型选 0.5B 模型。</translation>
    </message>
    <message>
        <source>save the imported conversations</source>
        <translation>保存导入的对话</translation>
    </message>
    <message>
        <source>Choose ChatGPT&apos;s conversations.json (from its data export) or a chat export of Open WebUI (.json).</source>
        <translation>请选择 ChatGPT 数据导出中的 conversations.json，或 Open WebUI 的对话导出（.json）。</translation>
    </message>
    <message>
        <source>Conversation {n} of the ChatGPT export has no message tree (“mapping”).</source>
        <translation>ChatGPT 导出中的第 {n} 个对话没有消息树（“mapping”）。</translation>
    </message>
    <message>
        <source>Chat {n} of the Open WebUI export has no messages (“history” or “messages”).</source>
        <translation>Open WebUI 导出中的第 {n} 个对话没有消息（“history”或“messages”）。</translation>
    </message>
    <message>
        <source>This file holds no conversations.</source>
        <translation>此文件中没有对话。</translation>
    </message>
    <message>
        <source>This file is not an export of ChatGPT or Open WebUI.</source>
        <translation>此文件不是 ChatGPT 或 Open WebUI 的导出。</translation>
    </message>
    <message>
        <source>Item {n} of the file is not a conversation.</source>
        <translation>文件中的第 {n} 项不是对话。</translation>
    </message>
    <message>
        <source>{file} is {size} MB: more than the {limit} MB an import reads.</source>
        <translation>{file} 有 {size} MB：超过导入可读取的 {limit} MB。</translation>
    </message>
    <message>
        <source>Split the export into smaller files.</source>
        <translation>请将导出拆分为更小的文件。</translation>
    </message>
    <message>
        <source>Cannot read {file}: {reason}</source>
        <translation>无法读取 {file}：{reason}</translation>
    </message>
    <message>
        <source>{file} is not a JSON file ({reason}).</source>
        <translation>{file} 不是 JSON 文件（{reason}）。</translation>
    </message>
    <message>
        <source>Check the file exists and is readable.</source>
        <translation>请检查该文件是否存在且可读。</translation>
    </message>
    <message>
        <source>Only .gguf model files can be used; convert or download a GGUF version.</source>
        <translation>只能使用 .gguf 模型文件；请转换或下载 GGUF 版本。</translation>
    </message>
    <message>
        <source>{file} is not a GGUF file (it starts with {magic}, not b&apos;GGUF&apos;).</source>
        <translation>{file} 不是 GGUF 文件（它以 {magic} 开头，而不是 b&apos;GGUF&apos;）。</translation>
    </message>
    <message>
        <source>{file} is incomplete: {size} bytes of the {required} its header describes.</source>
        <translation>{file} 不完整：只有 {size} 字节，而其文件头描述的是 {required} 字节。</translation>
    </message>
    <message>
        <source>The download probably stopped; download the file again.</source>
        <translation>下载可能中断了；请重新下载该文件。</translation>
    </message>
    <message>
        <source>{file} is incomplete: it ends inside its header.</source>
        <translation>{file} 不完整：文件在其文件头内就结束了。</translation>
    </message>
    <message>
        <source>Not a GGUF file (it starts with {magic}, not b&apos;GGUF&apos;).</source>
        <translation>不是 GGUF 文件（它以 {magic} 开头，而不是 b&apos;GGUF&apos;）。</translation>
    </message>
    <message>
        <source>a string claims {size} bytes</source>
        <translation>某个字符串声称有 {size} 字节</translation>
    </message>
    <message>
        <source>The file is damaged or not a real model: download it again, or remove it from the models folder.</source>
        <translation>该文件已损坏或不是真正的模型：请重新下载，或将其从模型文件夹中移除。</translation>
    </message>
    <message>
        <source>Corrupt GGUF header: {what}.</source>
        <translation>GGUF 文件头已损坏：{what}。</translation>
    </message>
    <message>
        <source>The GGUF header is larger than {size} MB.</source>
        <translation>GGUF 文件头大于 {size} MB。</translation>
    </message>
    <message>
        <source>The GGUF header is larger than {size} bytes.</source>
        <translation>GGUF 文件头大于 {size} 字节。</translation>
    </message>
    <message>
        <source>a string is not valid UTF-8</source>
        <translation>某个字符串不是有效的 UTF-8</translation>
    </message>
    <message>
        <source>an array of arrays (llama.cpp does not load nested arrays)</source>
        <translation>数组中嵌套了数组（llama.cpp 不加载嵌套数组）</translation>
    </message>
    <message>
        <source>an array of unknown value type {type}</source>
        <translation>数组的值类型 {type} 未知</translation>
    </message>
    <message>
        <source>an array claims {count} items</source>
        <translation>某个数组声称有 {count} 项</translation>
    </message>
    <message>
        <source>unknown value type {type}</source>
        <translation>未知的值类型 {type}</translation>
    </message>
    <message>
        <source>{key} is {value}, not a count</source>
        <translation>{key} 为 {value}，不是数量</translation>
    </message>
    <message>
        <source>Unsupported GGUF version {version}.</source>
        <translation>不支持的 GGUF 版本 {version}。</translation>
    </message>
    <message>
        <source>Update Strata or use a newer conversion of the model.</source>
        <translation>请更新 Strata，或使用该模型较新的转换版本。</translation>
    </message>
    <message>
        <source>impossible tensor or key count ({tensors} tensors, {keys} keys)</source>
        <translation>张量或键的数量不可能成立（{tensors} 个张量，{keys} 个键）</translation>
    </message>
    <message>
        <source>the key {key} appears twice</source>
        <translation>键 {key} 出现了两次</translation>
    </message>
    <message>
        <source>tensor {name} has {count} dimensions</source>
        <translation>张量 {name} 有 {count} 个维度</translation>
    </message>
    <message>
        <source>alignment {value}</source>
        <translation>对齐值 {value}</translation>
    </message>
    <message>
        <source>{file} is not a GGUF file (it is too short).</source>
        <translation>{file} 不是 GGUF 文件（文件太短）。</translation>
    </message>
    <message>
        <source>Only .gguf model files can be used.</source>
        <translation>只能使用 .gguf 模型文件。</translation>
    </message>
    <message>
        <source>{file}: {reason}</source>
        <translation>{file}：{reason}</translation>
    </message>
    <message>
        <source>The hub at {endpoint} sent something that is not a search result.</source>
        <translation>位于 {endpoint} 的 Hugging Face 返回的内容不是搜索结果。</translation>
    </message>
    <message>
        <source>The hub at {endpoint} sent an unexpected search answer.</source>
        <translation>位于 {endpoint} 的 Hugging Face 返回了意外的搜索结果。</translation>
    </message>
    <message>
        <source>The hub at {endpoint} sent something that is not a model&apos;s details for {repo}.</source>
        <translation>位于 {endpoint} 的 Hugging Face 返回的内容不是 {repo} 的模型详情。</translation>
    </message>
    <message>
        <source>The access token is empty.</source>
        <translation>访问令牌为空。</translation>
    </message>
    <message>
        <source>Paste a token from your hub account settings.</source>
        <translation>请从你的 Hugging Face 账户设置中粘贴一个令牌。</translation>
    </message>
    <message>
        <source>The hub endpoint (or mirror) sent a name that could write outside the hub cache; check the hub endpoint in Settings.</source>
        <translation>hub 端点（或镜像）发来的名称可能会写到 hub 缓存之外；请在设置中检查 hub 端点。</translation>
    </message>
    <message>
        <source>The hub at {endpoint} sent an unsafe {what} ({value}); Strata did not use it.</source>
        <translation>位于 {endpoint} 的 Hugging Face 发来了不安全的 {what}（{value}）；Strata 未使用它。</translation>
    </message>
    <message>
        <source>The hub sent an unsafe {what} ({value}); Strata did not use it.</source>
        <translation>Hugging Face 发来了不安全的 {what}（{value}）；Strata 未使用它。</translation>
    </message>
    <message>
        <source>{repo} is not a valid repository id.</source>
        <translation>{repo} 不是有效的仓库 ID。</translation>
    </message>
    <message>
        <source>Repository ids look like org/name (letters, digits, &apos;-&apos;, &apos;_&apos;, &apos;.&apos;).</source>
        <translation>仓库 ID 的形式为 org/name（字母、数字、&apos;-&apos;、&apos;_&apos;、&apos;.&apos;）。</translation>
    </message>
    <message>
        <source>{label} is too short to be a safetensors file.</source>
        <translation>{label} 太短，不可能是 safetensors 文件。</translation>
    </message>
    <message>
        <source>{label} does not look like a safetensors file.</source>
        <translation>{label} 看起来不像 safetensors 文件。</translation>
    </message>
    <message>
        <source>The safetensors header of {label} is corrupt.</source>
        <translation>{label} 的 safetensors 文件头已损坏。</translation>
    </message>
    <message>
        <source>The safetensors header of {label} is not a table of tensors.</source>
        <translation>{label} 的 safetensors 文件头不是张量表。</translation>
    </message>
    <message>
        <source>The server at {where} sent a compressed part of {label}.</source>
        <translation>位于 {where} 的服务器发来了 {label} 的压缩片段。</translation>
    </message>
    <message>
        <source>A proxy may be altering the traffic; try again or check the hub endpoint in Settings.</source>
        <translation>可能有代理在篡改流量；请重试，或在设置中检查 hub 端点。</translation>
    </message>
    <message>
        <source>The server at {where} did not send the part of {label} Strata asked for ({length} bytes instead of at most {cap}).</source>
        <translation>位于 {where} 的服务器没有发送 Strata 请求的 {label} 片段（发来 {length} 字节，而非至多 {cap} 字节）。</translation>
    </message>
    <message>
        <source>The server at {where} did not send the part of {label} Strata asked for (no bytes instead of at most {cap}).</source>
        <translation>位于 {where} 的服务器没有发送 Strata 请求的 {label} 片段（未给出字节数，而非至多 {cap} 字节）。</translation>
    </message>
    <message>
        <source>The hub endpoint must support ranged requests; check it in Settings.</source>
        <translation>hub 端点必须支持范围请求；请在设置中检查。</translation>
    </message>
    <message>
        <source>The server sent the wrong part of {label}.</source>
        <translation>服务器发来了 {label} 的错误片段。</translation>
    </message>
    <message>
        <source>Try again; a proxy may be interfering.</source>
        <translation>请重试；可能有代理在干扰。</translation>
    </message>
    <message>
        <source>{label} ends inside its GGUF header.</source>
        <translation>{label} 在其 GGUF 文件头内就结束了。</translation>
    </message>
    <message>
        <source>The file on the hub is incomplete or not a model.</source>
        <translation>Hugging Face 上的该文件不完整或不是模型。</translation>
    </message>
    <message>
        <source>The GGUF header of {label} is larger than {size} MB.</source>
        <translation>{label} 的 GGUF 文件头大于 {size} MB。</translation>
    </message>
    <message>
        <source>Could not read the model header: {reason}</source>
        <translation>无法读取模型文件头：{reason}</translation>
    </message>
    <message>
        <source>Turn off offline mode in Settings to search and download; the library still works.</source>
        <translation>请在设置中关闭离线模式以搜索和下载；模型库仍可使用。</translation>
    </message>
    <message>
        <source>Strata is in offline mode.</source>
        <translation>Strata 处于离线模式。</translation>
    </message>
    <message>
        <source>This repository has no GGUF files.</source>
        <translation>此仓库没有 GGUF 文件。</translation>
    </message>
    <message>
        <source>{repo} has no GGUF files.</source>
        <translation>{repo} 没有 GGUF 文件。</translation>
    </message>
    <message>
        <source>Pick a repository whose name ends in -GGUF.</source>
        <translation>请选择名称以 -GGUF 结尾的仓库。</translation>
    </message>
    <message>
        <source>{repo} has no quant &apos;{quant}&apos;.</source>
        <translation>{repo} 没有量化版本“{quant}”。</translation>
    </message>
    <message>
        <source>Available: {labels}</source>
        <translation>可用：{labels}</translation>
    </message>
    <message>
        <source>This repository has no single-file image model.</source>
        <translation>此仓库没有单文件图像模型。</translation>
    </message>
    <message>
        <source>{file} is not an image model stable-diffusion.cpp recognises.</source>
        <translation>{file} 不是 stable-diffusion.cpp 能识别的图像模型。</translation>
    </message>
    <message>
        <source>{fit}, not counting the missing parts</source>
        <translation>{fit}（未计入缺失的部分）</translation>
    </message>
    <message>
        <source>This repository has no whisper model (ggml-*.bin).</source>
        <translation>这个仓库没有 whisper 模型（ggml-*.bin）。</translation>
    </message>
    <message>
        <source>Tiny and fast; runs anywhere, even on the processor. Good for a first try.</source>
        <extracomment>The shipped list&apos;s descriptions, marked so the catalogue translates them (the GUI looks a starter&apos;s description up whole; one not listed here is shown as written). tests/models checks the list is whole.</extracomment>
        <translation>小而快；在哪里都能运行，处理器上也行。适合初次尝试。</translation>
    </message>
    <message>
        <source>Small general assistant from Meta with a long context window.</source>
        <translation>Meta 出品的小型通用助手，上下文窗口很长。</translation>
    </message>
    <message>
        <source>Capable everyday assistant that fits most GPUs with 4 GB or more.</source>
        <translation>能干的日常助手，适合大多数 4 GB 及以上显存的 GPU。</translation>
    </message>
    <message>
        <source>Strong all-rounder for writing, coding and many languages (8 GB GPUs).</source>
        <translation>写作、编程、多语言都很强的全能模型（8 GB GPU）。</translation>
    </message>
    <message>
        <source>Google&apos;s mid-size model with fluent, well-structured answers.</source>
        <translation>Google 的中等规模模型，回答流畅、条理清晰。</translation>
    </message>
    <message>
        <source>The best answers of this list; needs a GPU with 12 GB or more.</source>
        <translation>本列表中回答最好的模型；需要 12 GB 及以上显存的 GPU。</translation>
    </message>
    <message>
        <source>The starter model list is damaged; reinstall Strata.</source>
        <translation>入门模型列表已损坏；请重新安装 Strata。</translation>
    </message>
    <message>
        <source>Reinstall Strata.</source>
        <translation>请重新安装 Strata。</translation>
    </message>
    <message>
        <source>{where}: &apos;{key}&apos; is missing or not a {kind}.</source>
        <translation>{where}：&apos;{key}&apos; 缺失或不是 {kind}。</translation>
    </message>
    <message>
        <source>{where}: &apos;{key}&apos; must be positive.</source>
        <translation>{where}：&apos;{key}&apos; 必须为正数。</translation>
    </message>
    <message>
        <source>{origin} is not a version {version} starter model list.</source>
        <translation>{origin} 不是第 {version} 版的入门模型列表。</translation>
    </message>
    <message>
        <source>{origin}, entry {number}</source>
        <translation>{origin} 第 {number} 项</translation>
    </message>
    <message>
        <source>{where} is not an object.</source>
        <translation>{where} 不是对象。</translation>
    </message>
    <message>
        <source>{where}: &apos;shape&apos; is missing.</source>
        <translation>{where}：缺少 &apos;shape&apos;。</translation>
    </message>
    <message>
        <source>{where} shape</source>
        <translation>{where} 的 shape</translation>
    </message>
    <message>
        <source>{where}: &apos;{file}&apos; is not a GGUF file.</source>
        <translation>{where}：&apos;{file}&apos; 不是 GGUF 文件。</translation>
    </message>
    <message>
        <source>{where}: repo &apos;{repo}&apos; is not owner/name.</source>
        <translation>{where}：仓库 &apos;{repo}&apos; 不是 owner/name 的形式。</translation>
    </message>
    <message>
        <source>{where}: the id &apos;{id}&apos; appears twice.</source>
        <translation>{where}：ID &apos;{id}&apos; 出现了两次。</translation>
    </message>
    <message>
        <source>{origin} lists no models.</source>
        <translation>{origin} 中没有列出任何模型。</translation>
    </message>
    <message>
        <source>Could not read the starter model list {path}: {reason}</source>
        <translation>无法读取入门模型列表 {path}：{reason}</translation>
    </message>
    <message>
        <source>{file} is not valid JSON (line {line}).</source>
        <translation>{file} 不是有效的 JSON（第 {line} 行）。</translation>
    </message>
    <message>
        <source>Lending this computer needs the engine pool.</source>
        <translation>出借本机需要引擎池。</translation>
    </message>
    <message>
        <source>No installed engine ships an RPC server.</source>
        <translation>已安装的引擎都不带 RPC 服务器。</translation>
    </message>
    <message>
        <source>Install a Vulkan or ROCm engine that includes rpc-server.</source>
        <translation>请安装包含 rpc-server 的 Vulkan 或 ROCm 引擎。</translation>
    </message>
    <message>
        <source>&apos;{address}&apos; is not a worker address.</source>
        <translation>“{address}”不是工作节点地址。</translation>
    </message>
    <message>
        <source>Use host:port, e.g. 192.168.1.30:50052.</source>
        <translation>请使用 host:port 格式，例如 192.168.1.30:50052。</translation>
    </message>
    <message>
        <source>The MCP configuration</source>
        <translation>MCP 配置</translation>
    </message>
    <message>
        <source>the MCP configuration</source>
        <translation>MCP 配置</translation>
    </message>
    <message>
        <source>the file {path}</source>
        <translation>文件 {path}</translation>
    </message>
    <message>
        <source>the pasted configuration</source>
        <translation>粘贴的配置</translation>
    </message>
    <message>
        <source>{source} is nested too deeply to be a tool server configuration.</source>
        <translation>{source} 嵌套过深，不是有效的工具服务器配置。</translation>
    </message>
    <message>
        <source>{source} is not valid JSON (line {line}, column {column}: {reason}).</source>
        <translation>{source}不是有效的 JSON（第 {line} 行，第 {column} 列：{reason}）。</translation>
    </message>
    <message>
        <source>Check for a missing comma or quote, or a trailing comma; comments are not allowed in JSON.</source>
        <translation>请检查是否缺少逗号或引号，或有多余的结尾逗号；JSON 中不允许注释。</translation>
    </message>
    <message>
        <source>The file {path}</source>
        <translation>文件 {path}</translation>
    </message>
    <message>
        <source>The MCP configuration file {path} does not exist.</source>
        <translation>MCP 配置文件 {path} 不存在。</translation>
    </message>
    <message>
        <source>The MCP configuration file {path} cannot be read.</source>
        <translation>无法读取 MCP 配置文件 {path}。</translation>
    </message>
    <message>
        <source>Check that it is a UTF-8 text file you may read.</source>
        <translation>请确认它是你有权读取的 UTF-8 文本文件。</translation>
    </message>
    <message>
        <source>Expected {&quot;mcpServers&quot;: {&quot;name&quot;: {&quot;command&quot;: ..., &quot;args&quot;: [...]}}} or {&quot;name&quot;: {&quot;url&quot;: ...}}.</source>
        <translation>应为 {&quot;mcpServers&quot;: {&quot;name&quot;: {&quot;command&quot;: ..., &quot;args&quot;: [...]}}} 或 {&quot;name&quot;: {&quot;url&quot;: ...}} 的形式。</translation>
    </message>
    <message>
        <source>{source} is not an MCP server configuration.</source>
        <translation>{source}不是 MCP 服务器配置。</translation>
    </message>
    <message>
        <source>{source} has no &quot;mcpServers&quot; section.</source>
        <translation>{source}中没有 &quot;mcpServers&quot; 部分。</translation>
    </message>
    <message>
        <source>In {source}, &quot;mcpServers&quot; is not an object of named servers.</source>
        <translation>在{source}中，&quot;mcpServers&quot; 不是由具名服务器组成的对象。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; is not an object.</source>
        <translation>工具服务器“{name}”不是一个对象。</translation>
    </message>
    <message>
        <source>Give it &quot;command&quot; (a local server) or &quot;url&quot; (a remote one).</source>
        <translation>请为其设置 &quot;command&quot;（本地服务器）或 &quot;url&quot;（远程服务器）。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; uses &quot;envFile&quot;, which Strata does not read.</source>
        <translation>工具服务器“{name}”使用了 &quot;envFile&quot;，Strata 不读取该项。</translation>
    </message>
    <message>
        <source>Copy the variables into &quot;env&quot; instead.</source>
        <translation>请改为将这些变量复制到 &quot;env&quot; 中。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has no &quot;command&quot;.</source>
        <translation>工具服务器“{name}”没有 &quot;command&quot;。</translation>
    </message>
    <message>
        <source>A local server needs &quot;command&quot;, e.g. &quot;npx&quot; or &quot;uvx&quot;.</source>
        <translation>本地服务器需要 &quot;command&quot;，例如 &quot;npx&quot; 或 &quot;uvx&quot;。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has &quot;args&quot; that is not a list.</source>
        <translation>工具服务器“{name}”的 &quot;args&quot; 不是列表。</translation>
    </message>
    <message>
        <source>Write the arguments as [&quot;arg1&quot;, &quot;arg2&quot;].</source>
        <translation>请将参数写成 [&quot;arg1&quot;, &quot;arg2&quot;] 的形式。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has a &quot;cwd&quot; that is not a folder path.</source>
        <translation>工具服务器“{name}”的 &quot;cwd&quot; 不是文件夹路径。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has no &quot;url&quot;.</source>
        <translation>工具服务器“{name}”没有 &quot;url&quot;。</translation>
    </message>
    <message>
        <source>A remote server needs &quot;url&quot;, e.g. &quot;https://example.com/mcp&quot;.</source>
        <translation>远程服务器需要 &quot;url&quot;，例如 &quot;https://example.com/mcp&quot;。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has the address &apos;{url}&apos;, which is not an http(s) URL.</source>
        <translation>工具服务器“{name}”的地址“{url}”不是 http(s) URL。</translation>
    </message>
    <message>
        <source>Use the form https://host/path.</source>
        <translation>请使用 https://host/path 的形式。</translation>
    </message>
    <message>
        <source>A tool server has no name.</source>
        <translation>有一个工具服务器没有名称。</translation>
    </message>
    <message>
        <source>Give every server a name.</source>
        <translation>请为每个服务器取一个名称。</translation>
    </message>
    <message>
        <source>The tool server name &apos;{name}&apos; is too long or has control characters.</source>
        <translation>工具服务器名称“{name}”过长或包含控制字符。</translation>
    </message>
    <message>
        <source>Use a short name (at most {count} characters).</source>
        <translation>请使用较短的名称（最多 {count} 个字符）。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has both &quot;command&quot; and &quot;url&quot;.</source>
        <translation>工具服务器“{name}”同时有 &quot;command&quot; 和 &quot;url&quot;。</translation>
    </message>
    <message>
        <source>Keep the one this server uses.</source>
        <translation>请只保留该服务器实际使用的那一项。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has neither &quot;command&quot; nor &quot;url&quot;.</source>
        <translation>工具服务器“{name}”既没有 &quot;command&quot; 也没有 &quot;url&quot;。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has a transport type that is not text.</source>
        <translation>工具服务器“{name}”的传输类型不是文本。</translation>
    </message>
    <message>
        <source>Use &quot;stdio&quot; or &quot;http&quot;.</source>
        <translation>请使用 &quot;stdio&quot; 或 &quot;http&quot;。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; uses the older HTTP+SSE transport, which Strata does not speak.</source>
        <translation>工具服务器“{name}”使用的是较旧的 HTTP+SSE 传输方式，Strata 不支持。</translation>
    </message>
    <message>
        <source>Use the server&apos;s streamable-HTTP address instead (often the same host, ending in /mcp).</source>
        <translation>请改用该服务器的 streamable-HTTP 地址（通常是同一主机，以 /mcp 结尾）。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has the unknown transport type &apos;{transport}&apos;.</source>
        <translation>工具服务器“{name}”的传输类型“{transport}”未知。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has a value in &quot;{field}&quot; that is not text.</source>
        <translation>工具服务器“{name}”的 &quot;{field}&quot; 中有一个值不是文本。</translation>
    </message>
    <message>
        <source>Write every value in &quot;{field}&quot; as a string.</source>
        <translation>请将 &quot;{field}&quot; 中的每个值都写成字符串。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has &quot;{field}&quot; that is not an object.</source>
        <translation>工具服务器“{name}”的 &quot;{field}&quot; 不是对象。</translation>
    </message>
    <message>
        <source>Write &quot;{field}&quot; as {{&quot;NAME&quot;: &quot;value&quot;}}.</source>
        <translation>请将 &quot;{field}&quot; 写成 {{&quot;NAME&quot;: &quot;value&quot;}} 的形式。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has an empty name in &quot;{field}&quot;.</source>
        <translation>工具服务器“{name}”的 &quot;{field}&quot; 中有一个空名称。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has &quot;{field}&quot; that is not true or false.</source>
        <translation>工具服务器“{name}”的 &quot;{field}&quot; 不是 true 或 false。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; has a &quot;timeout&quot; that is not a positive number of seconds.</source>
        <translation>工具服务器“{name}”的 &quot;timeout&quot; 不是正的秒数。</translation>
    </message>
    <message>
        <source>There is no tool named &apos;{name}&apos;.</source>
        <translation>没有名为“{name}”的工具。</translation>
    </message>
    <message>
        <source>The model asked for a tool that none of the enabled tool servers offers.</source>
        <translation>模型请求的工具不由任何已启用的工具服务器提供。</translation>
    </message>
    <message>
        <source>Two tool servers are named &apos;{name}&apos;.</source>
        <translation>有两个工具服务器都名为“{name}”。</translation>
    </message>
    <message>
        <source>Give each server its own name.</source>
        <translation>请为每个服务器取不同的名称。</translation>
    </message>
    <message>
        <source>There is no tool server named &apos;{name}&apos;.</source>
        <translation>没有名为“{name}”的工具服务器。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; is turned off.</source>
        <translation>工具服务器“{name}”已关闭。</translation>
    </message>
    <message>
        <source>Turn it on in the tool settings.</source>
        <translation>请在工具设置中将其开启。</translation>
    </message>
    <message>
        <source>The working folder of the tool server &apos;{name}&apos; does not exist: {path}</source>
        <translation>工具服务器“{name}”的工作文件夹不存在：{path}</translation>
    </message>
    <message>
        <source>Fix its &quot;cwd&quot; or remove it.</source>
        <translation>请修正其 &quot;cwd&quot;，或将其删除。</translation>
    </message>
    <message>
        <source>The program &apos;{program}&apos; of the tool server &apos;{name}&apos; was not found.</source>
        <translation>找不到工具服务器“{name}”的程序“{program}”。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; did not answer within {seconds:.0f} s of starting.</source>
        <translation>工具服务器“{name}”启动后 {seconds:.0f} 秒内没有响应。</translation>
    </message>
    <message>
        <source>Check its command; the server may be waiting for input.</source>
        <translation>请检查其命令；该服务器可能正在等待输入。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; stopped while starting: {last}</source>
        <translation>工具服务器“{name}”在启动过程中停止了：{last}</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; stopped while starting.</source>
        <translation>工具服务器“{name}”在启动过程中停止了。</translation>
    </message>
    <message>
        <source>Check its command and arguments; run it in a terminal to see why.</source>
        <translation>请检查其命令和参数；在终端中运行它可查看原因。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; refused the connection (HTTP {status}).</source>
        <translation>工具服务器“{name}”拒绝了连接（HTTP {status}）。</translation>
    </message>
    <message>
        <source>Check its headers (an API key or token may be missing or wrong).</source>
        <translation>请检查其请求头（可能缺少 API 密钥或令牌，或其有误）。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; answered HTTP {status}.</source>
        <translation>工具服务器“{name}”返回了 HTTP {status}。</translation>
    </message>
    <message>
        <source>Check that the address is the server&apos;s MCP endpoint (often ending in /mcp).</source>
        <translation>请确认该地址是服务器的 MCP 端点（通常以 /mcp 结尾）。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; did not answer within {seconds:.0f} s.</source>
        <translation>工具服务器“{name}”在 {seconds:.0f} 秒内没有响应。</translation>
    </message>
    <message>
        <source>Check the address and your network.</source>
        <translation>请检查地址和网络连接。</translation>
    </message>
    <message>
        <source>Could not reach the tool server &apos;{name}&apos; at {address}.</source>
        <translation>无法连接位于 {address} 的工具服务器“{name}”。</translation>
    </message>
    <message>
        <source>The tool server &apos;{name}&apos; could not list its tools.</source>
        <translation>工具服务器“{name}”无法列出其工具。</translation>
    </message>
    <message>
        <source>It may have stopped; the next try starts it again.</source>
        <translation>它可能已停止；下次尝试时会重新启动它。</translation>
    </message>
    <message>
        <source>Install Node.js (it brings npx), or give the full path of the program.</source>
        <translation>请安装 Node.js（它自带 npx），或填写程序的完整路径。</translation>
    </message>
    <message>
        <source>Install uv (https://docs.astral.sh/uv/), or give the full path of the program.</source>
        <translation>请安装 uv（https://docs.astral.sh/uv/），或填写程序的完整路径。</translation>
    </message>
    <message>
        <source>Install {program}, or give the full path of the program.</source>
        <translation>请安装 {program}，或填写程序的完整路径。</translation>
    </message>
    <message>
        <source>Install it, or give the full path of the program in the server&apos;s settings.</source>
        <translation>请安装该程序，或在服务器设置中填写程序的完整路径。</translation>
    </message>
    <message>
        <source>it is nested too deeply</source>
        <translation>嵌套过深</translation>
    </message>
    <message>
        <source>it is not valid JSON ({reason})</source>
        <translation>不是有效的 JSON（{reason}）</translation>
    </message>
    <message>
        <source>it does not hold what Strata wrote there</source>
        <translation>内容不是 Strata 写入的格式</translation>
    </message>
    <message>
        <source>it is larger than {size} MiB</source>
        <translation>大于 {size} MiB</translation>
    </message>
    <message>
        <source>it is not UTF-8 text</source>
        <translation>不是 UTF-8 文本</translation>
    </message>
    <message>
        <source>Could not read {what} ({path}): {reason}. Strata goes on without it.</source>
        <translation>无法读取{what}（{path}）：{reason}。Strata 将在没有它的情况下继续。</translation>
    </message>
    <message>
        <source>Could not use {what} ({path}): {reason}. Strata goes on without it and left the file as it is.</source>
        <translation>无法使用{what}（{path}）：{reason}。Strata 将在没有它的情况下继续，文件保持原样。</translation>
    </message>
    <message>
        <source>Could not use {what} ({path}): {reason}. The file was kept as {name}, and Strata goes on without it.</source>
        <translation>无法使用{what}（{path}）：{reason}。该文件已另存为 {name}，Strata 将在没有它的情况下继续。</translation>
    </message>
    <message>
        <source>refused before because {reason}</source>
        <translation>之前被拒绝，原因：{reason}</translation>
    </message>
    <message>
        <source>refused at {time} because {reason}</source>
        <translation>于 {time} 被拒绝，原因：{reason}</translation>
    </message>
    <message>
        <source>{tag} (named {version}, {date})</source>
        <translation>{tag}（名为 {version}，{date}）</translation>
    </message>
    <message>
        <source>{tag} ({date})</source>
        <translation>{tag}（{date}）</translation>
    </message>
    <message>
        <source>{release}: offered, not tried: {why}</source>
        <translation>{release}：已提供，未试用：{why}</translation>
    </message>
    <message>
        <source>{release}: offered</source>
        <translation>{release}：已提供</translation>
    </message>
    <message>
        <source>{release}: skipped: {why}</source>
        <translation>{release}：已跳过：{why}</translation>
    </message>
    <message>
        <source>Releases looked at for {backend} {tag} ({engine}):</source>
        <translation>为 {backend} {tag}（{engine}）查看的发布版本：</translation>
    </message>
    <message>
        <source>note: {message} ({time}); the next update tries it again.</source>
        <translation>注意：{message}（{time}）；下次更新时会再试。</translation>
    </message>
    <message>
        <source>All engines are up to date.</source>
        <translation>所有引擎均为最新。</translation>
    </message>
    <message>
        <source>The tool arguments are nested more than {depth} levels deep; they were not used.</source>
        <translation>工具参数嵌套超过 {depth} 层；未使用这些参数。</translation>
    </message>
    <message>
        <source>The model wrote arguments no tool takes; ask again or rephrase.</source>
        <translation>模型写出的参数没有工具能接受；请重新提问或换种说法。</translation>
    </message>
    <message>
        <source>The tool arguments are not valid JSON ({error} at character {position}).</source>
        <translation>工具参数不是有效的 JSON（第 {position} 个字符处：{error}）。</translation>
    </message>
    <message>
        <source>The tool arguments could not be read ({error}).</source>
        <translation>无法读取工具参数（{error}）。</translation>
    </message>
    <message>
        <source>The tool arguments must be a JSON object.</source>
        <translation>工具参数必须是 JSON 对象。</translation>
    </message>
    <message>
        <source>The tool name &apos;{name}&apos; could mean the tool &apos;{first}&apos; of &apos;{first_server}&apos; or &apos;{second}&apos; of &apos;{second_server}&apos;.</source>
        <translation>工具名“{name}”可能指“{first_server}”的工具“{first}”，也可能指“{second_server}”的工具“{second}”。</translation>
    </message>
    <message>
        <source>Rename one of the servers, or answer when asked instead.</source>
        <translation>请重命名其中一个服务器，或在询问时再作答。</translation>
    </message>
    <message>
        <source>its hipBLASLt revision</source>
        <translation>其 hipBLASLt 版本</translation>
    </message>
    <message>
        <source>its gfx target</source>
        <translation>其 gfx 目标</translation>
    </message>
    <message>
        <source>its header</source>
        <translation>其表头</translation>
    </message>
    <message>
        <source>a row</source>
        <translation>某一行</translation>
    </message>
    <message>
        <source>reading it</source>
        <translation>读取</translation>
    </message>
    <message>
        <source>Update the engine, or fetch the table made for the hipBLASLt revision this engine ships (Engines page, or strata engines install).</source>
        <translation>请更新引擎，或获取为此引擎所带 hipBLASLt 版本制作的表（“引擎”页面，或 strata engines install）。</translation>
    </message>
    <message>
        <source>Fetch the table made for this GPU&apos;s gfx target (Engines page, or strata engines install).</source>
        <translation>请获取为此 GPU 的 gfx 目标制作的表（“引擎”页面，或 strata engines install）。</translation>
    </message>
    <message>
        <source>The table is damaged: install the engine again to fetch it anew.</source>
        <translation>该表已损坏：请重新安装引擎以重新获取。</translation>
    </message>
    <message>
        <source>Check the engine&apos;s folder, then install the engine again.</source>
        <translation>请检查引擎文件夹，然后重新安装引擎。</translation>
    </message>
    <message>
        <source>Prefill reached only {percent} % of this GPU&apos;s compute limit: hipBLASLt&apos;s tuning table was rejected on {check} ({reason}), so the dense projections take the untuned slow path. {fix}</source>
        <translation>预填充只达到此 GPU 计算上限的 {percent} %：hipBLASLt 调优表在{check}检查上被拒绝（{reason}），因此稠密投影走的是未调优的慢速路径。{fix}</translation>
    </message>
    <message>
        <source>Prefill reached only {percent} % of this GPU&apos;s compute limit: a hipBLASLt tuning table for {gfx} and revision {revision} is published but not installed, so the dense projections take the untuned slow path. Install the engine again to fetch it.</source>
        <translation>预填充只达到此 GPU 计算上限的 {percent} %：已发布适用于 {gfx} 和版本 {revision} 的 hipBLASLt 调优表，但尚未安装，因此稠密投影走的是未调优的慢速路径。请重新安装引擎以获取它。</translation>
    </message>
    <message>
        <source>Prefill reached only {percent} % of this GPU&apos;s compute limit: the hipBLASLt tuning table for {gfx} is made for revision {published}, and this engine ships {revision}, so hipBLASLt would ignore it (revision check) and the dense projections take the untuned slow path. Update the engine to a build with that revision.</source>
        <translation>预填充只达到此 GPU 计算上限的 {percent} %：{gfx} 的 hipBLASLt 调优表是为版本 {published} 制作的，而此引擎带的是 {revision}，hipBLASLt 会忽略它（版本检查），稠密投影因此走未调优的慢速路径。请将引擎更新到带该版本的构建。</translation>
    </message>
    <message>
        <source>the benchmark measured Vulkan prefilling {times:.1f}× as fast as ROCm for this model here ({vulkan:,.0f} vs {rocm:,.0f} tokens/s): ROCm&apos;s prefill takes a slow path</source>
        <translation>基准测试测得此模型在这里用 Vulkan 预填充的速度是 ROCm 的 {times:.1f} 倍（{vulkan:,.0f} 对 {rocm:,.0f} token/秒）：ROCm 的预填充走了慢速路径</translation>
    </message>
    <message>
        <source>you chose it</source>
        <translation>你选择了它</translation>
    </message>
    <message>
        <source>left out: you chose {names}</source>
        <translation>未使用：你选择了 {names}</translation>
    </message>
    <message>
        <source>the discrete AMD GPU with the most memory</source>
        <translation>显存最大的 AMD 独立显卡</translation>
    </message>
    <message>
        <source>the discrete AMD GPU</source>
        <translation>AMD 独立显卡</translation>
    </message>
    <message>
        <source>the only kind of AMD GPU here (integrated)</source>
        <translation>这里唯一的 AMD GPU（集成显卡）</translation>
    </message>
    <message>
        <source>integrated GPU left out: {best} is faster and has its own memory, and ROCm builds that see an iGPU may pick it or crash; choose it to use it</source>
        <translation>未使用集成显卡：{best} 更快且有独立显存，而能看到集成显卡的 ROCm 构建可能会选中它或崩溃；要使用它请勾选</translation>
    </message>
    <message>
        <source>left out: {best} has more memory ({mem}); choose both to use both</source>
        <translation>未使用：{best} 显存更大（{mem}）；两者都勾选即可同时使用</translation>
    </message>
    <message>
        <source>another GPU</source>
        <translation>另一块 GPU</translation>
    </message>
    <message>
        <source>not an AMD GPU ({vendor})</source>
        <translation>不是 AMD GPU（{vendor}）</translation>
    </message>
    <message>
        <source>Runs on the CPU: {why}.</source>
        <translation>在 CPU 上运行：{why}。</translation>
    </message>
    <message>
        <source>the engine runs on the processor</source>
        <translation>引擎在处理器上运行</translation>
    </message>
    <message>
        <source>the CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>the GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>runs on the CPU: {why}</source>
        <translation>在 CPU 上运行：{why}</translation>
    </message>
    <message>
        <source>runs on the CPU</source>
        <translation>在 CPU 上运行</translation>
    </message>
    <message>
        <source>runs on {device}</source>
        <translation>在 {device} 上运行</translation>
    </message>
    <message>
        <source>{backend} sees only {renderer}, a software driver on the processor</source>
        <translation>{backend} 只能看到 {renderer}，这是在处理器上运行的软件驱动</translation>
    </message>
    <message>
        <source>no GPU engine works here yet ({engines}: check failed)</source>
        <translation>这里还没有可用的 GPU 引擎（{engines}：检查未通过）</translation>
    </message>
    <message>
        <source>no GPU engine works here yet</source>
        <translation>这里还没有可用的 GPU 引擎</translation>
    </message>
    <message>
        <source>no GPU engine is installed</source>
        <translation>没有安装 GPU 引擎</translation>
    </message>
    <message>
        <source>no GPU was found</source>
        <translation>未发现 GPU</translation>
    </message>
    <message>
        <source>{why}; {detail}</source>
        <translation>{why}；{detail}</translation>
    </message>
    <message>
        <source>Install or update the AMD Adrenalin driver, then check the engines again (Engines page).</source>
        <translation>安装或更新 AMD Adrenalin 驱动，然后重新检查引擎（“引擎”页面）。</translation>
    </message>
    <message>
        <source>Install Mesa&apos;s RADV Vulkan driver (package mesa-vulkan-drivers) or a ROCm build that supports your GPU, then check the engines again (Engines page).</source>
        <translation>安装 Mesa 的 RADV Vulkan 驱动（软件包 mesa-vulkan-drivers）或支持你的 GPU 的 ROCm 构建，然后重新检查引擎（“引擎”页面）。</translation>
    </message>
    <message>
        <source>fits fully on GPU</source>
        <extracomment>Each verdict&apos;s words, marked for the catalogue (the values stay English: they are saved and printed).</extracomment>
        <translation>可完全放入 GPU</translation>
    </message>
    <message>
        <source>partial offload</source>
        <translation>部分卸载到 GPU</translation>
    </message>
    <message>
        <source>CPU only</source>
        <translation>仅 CPU</translation>
    </message>
    <message>
        <source>won&apos;t fit</source>
        <translation>放不下</translation>
    </message>
    <message>
        <source>fits in system RAM, runs on the CPU</source>
        <translation>可放入系统内存，在 CPU 上运行</translation>
    </message>
    <message>
        <source>partial offload ({layers} of {total} layers)</source>
        <translation>部分卸载（{total} 层中的 {layers} 层）</translation>
    </message>
    <message>
        <source>fits across {count} GPUs</source>
        <translation>可分布在 {count} 块 GPU 上</translation>
    </message>
    <message>
        <source>system RAM — {where}</source>
        <translation>系统内存 — {where}</translation>
    </message>
    <message>
        <source>Unknown export format “{fmt}”.</source>
        <translation>未知的导出格式“{fmt}”。</translation>
    </message>
    <message>
        <source>Choose md (Markdown), json or html.</source>
        <translation>请选择 md（Markdown）、json 或 html。</translation>
    </message>
    <message>
        <source>There is no conversation {id}.</source>
        <translation>没有对话 {id}。</translation>
    </message>
    <message>
        <source>List them with `strata chats list`.</source>
        <translation>用 `strata chats list` 列出对话。</translation>
    </message>
    <message>
        <source>Could not search the conversations: {reason}</source>
        <translation>无法搜索对话：{reason}</translation>
    </message>
    <message>
        <source>Try again; if it keeps failing, restart Strata.</source>
        <translation>请重试；如果一直失败，请重启 Strata。</translation>
    </message>
    <message>
        <source>The embedding engine answered {status}.</source>
        <translation>嵌入引擎返回了 {status}。</translation>
    </message>
    <message>
        <source>The embedding engine&apos;s answer is not what was asked.</source>
        <translation>嵌入引擎的回答与请求不符。</translation>
    </message>
    <message>
        <source>Cannot open {name}: {reason}</source>
        <translation>无法打开 {name}：{reason}</translation>
    </message>
    <message>
        <source>The file may have moved since it was attached; attach it again.</source>
        <translation>文件在附加之后可能已被移动；请重新附加。</translation>
    </message>
    <message>
        <source>{name} has no page {page}.</source>
        <translation>{name} 没有第 {page} 页。</translation>
    </message>
    <message>
        <source>Cannot draw page {page} of {name}: {reason}</source>
        <translation>无法绘制 {name} 的第 {page} 页：{reason}</translation>
    </message>
    <message>
        <source>{name} is not a regular file.</source>
        <translation>{name} 不是普通文件。</translation>
    </message>
    <message>
        <source>{name} is {size}, larger than the {cap} a document may be.</source>
        <translation>{name} 大小为 {size}，超过了文档上限 {cap}。</translation>
    </message>
    <message>
        <source>Attach a smaller file, or the part of it you need.</source>
        <translation>请附加更小的文件，或只附加需要的部分。</translation>
    </message>
    <message>
        <source>Cannot read {name}: {reason}</source>
        <translation>无法读取 {name}：{reason}</translation>
    </message>
    <message>
        <source>{name} is not what its name says: it is {what}.</source>
        <translation>{name} 与其名称不符：它是{what}。</translation>
    </message>
    <message>
        <source>Rename it to what it is, or attach the right file.</source>
        <translation>请按实际类型重命名，或附加正确的文件。</translation>
    </message>
    <message>
        <source>not a PDF</source>
        <translation>不是 PDF</translation>
    </message>
    <message>
        <source>not a DOCX (Word) file</source>
        <translation>不是 DOCX（Word）文件</translation>
    </message>
    <message>
        <source>binary data, not text</source>
        <translation>二进制数据，不是文本</translation>
    </message>
    <message>
        <source>{name} is not valid UTF-8: {count} invalid byte sequences were replaced with U+FFFD (�).</source>
        <translation>{name} 不是有效的 UTF-8：{count} 个无效字节序列已替换为 U+FFFD（�）。</translation>
    </message>
    <message>
        <source>{name} is a damaged PDF ({reason}).</source>
        <translation>{name} 是损坏的 PDF（{reason}）。</translation>
    </message>
    <message>
        <source>{name} is an encrypted PDF.</source>
        <translation>{name} 是加密的 PDF。</translation>
    </message>
    <message>
        <source>Save a copy without a password and attach that.</source>
        <translation>请另存一份无密码的副本再附加。</translation>
    </message>
    <message>
        <source>Open it in a PDF viewer and save it again.</source>
        <translation>请在 PDF 阅读器中打开并重新保存。</translation>
    </message>
    <message>
        <source>{name} has no text layer (a scanned PDF?); Strata cannot read text from images yet (no OCR).</source>
        <translation>{name} 没有文本层（扫描的 PDF？）；Strata 还不能从图像中读取文字（没有 OCR）。</translation>
    </message>
    <message>
        <source>Run OCR on it in another program first.</source>
        <translation>请先用其他程序对它进行 OCR。</translation>
    </message>
    <message>
        <source>{name} inflates to more than {cap} of text: it looks like a zip bomb, so it was not read.</source>
        <translation>{name} 解压后超过 {cap} 的文本：看起来像压缩炸弹，因此未读取。</translation>
    </message>
    <message>
        <source>{name} is not a readable DOCX file.</source>
        <translation>{name} 不是可读取的 DOCX 文件。</translation>
    </message>
    <message>
        <source>It has no word/document.xml.</source>
        <translation>它没有 word/document.xml。</translation>
    </message>
    <message>
        <source>{name} declares a DTD; Word files never do, so it was not read.</source>
        <translation>{name} 声明了 DTD；Word 文件从不这样做，因此未读取。</translation>
    </message>
    <message>
        <source>{name}, page {page}</source>
        <translation>{name}，第 {page} 页</translation>
    </message>
    <message>
        <source>The attached documents fit the context: they went whole with the question.</source>
        <translation>附加的文档能放入上下文：已随问题完整发送。</translation>
    </message>
    <message>
        <source>The attached documents are too long for the context: the {count} most relevant passages went with the question ({search}).</source>
        <translation>附加的文档超出上下文：已随问题发送最相关的 {count} 个段落（{search}）。</translation>
    </message>
    <message>
        <source>Reading {name}…</source>
        <translation>正在读取 {name}…</translation>
    </message>
    <message>
        <source>Indexing {name}…</source>
        <translation>正在索引 {name}…</translation>
    </message>
    <message>
        <source>This conversation has no document {id}.</source>
        <translation>此对话没有文档 {id}。</translation>
    </message>
    <message>
        <source>Embedding passages…</source>
        <translation>正在为段落生成向量…</translation>
    </message>
    <message>
        <source>No embedding model is chosen, so the search was full text only.</source>
        <translation>未选择嵌入模型，因此只进行了全文搜索。</translation>
    </message>
    <message>
        <source>The embedding engine failed ({error}), so the search was full text only.</source>
        <translation>嵌入引擎出错（{error}），因此只进行了全文搜索。</translation>
    </message>
    <message>
        <source>{count} passages have no vectors yet.</source>
        <translation>{count} 个段落还没有向量。</translation>
    </message>
    <message>
        <source>the document index</source>
        <translation>文档索引</translation>
    </message>
    <message>
        <source>save to the document index</source>
        <translation>保存到文档索引</translation>
    </message>
    <message>
        <source>The document index was written by a newer Strata (schema {schema}).</source>
        <translation>文档索引由更新版本的 Strata 写入（结构版本 {schema}）。</translation>
    </message>
    <message>
        <source>Update Strata to use these documents.</source>
        <translation>请更新 Strata 以使用这些文档。</translation>
    </message>
    <message>
        <source>&apos;{name}&apos; cannot be a model name.</source>
        <translation>“{name}”不能用作模型名称。</translation>
    </message>
    <message>
        <source>Use letters, digits and . _ - / : (at most 200).</source>
        <translation>请使用字母、数字和 . _ - / :（最多 200 个）。</translation>
    </message>
    <message>
        <source>Could not save the model names: {reason}</source>
        <translation>无法保存模型名称：{reason}</translation>
    </message>
    <message>
        <source>Cannot write the request log {path}: {reason}</source>
        <translation>无法写入请求日志 {path}：{reason}</translation>
    </message>
    <message>
        <source>&apos;{name}&apos; is not a Hugging Face model name.</source>
        <translation>“{name}”不是 Hugging Face 模型名称。</translation>
    </message>
    <message>
        <source>Strata pulls GGUF models from the Hugging Face hub: name one as hf.co/org/repo:Q4_K_M.</source>
        <translation>Strata 从 Hugging Face hub 拉取 GGUF 模型：请写成 hf.co/org/repo:Q4_K_M。</translation>
    </message>
    <message>
        <source>&apos;{name}&apos; is a file on this computer that Strata did not download: the API deletes only models in the Hugging Face cache.</source>
        <translation>“{name}”是本机上并非由 Strata 下载的文件：接口只删除 Hugging Face 缓存中的模型。</translation>
    </message>
    <message>
        <source>Delete it on Strata&apos;s Models page.</source>
        <translation>请在 Strata 的“模型”页删除它。</translation>
    </message>
    <message>
        <source>This server cannot name models.</source>
        <translation>此服务器不能为模型命名。</translation>
    </message>
    <message>
        <source>&apos;{name}&apos; is already the name of a model.</source>
        <translation>“{name}”已经是某个模型的名称。</translation>
    </message>
    <message>
        <source>Choose another name, or delete that model first.</source>
        <translation>请换一个名称，或先删除那个模型。</translation>
    </message>
    <message>
        <source>{path} is not a regular file (a pipe, device or folder cannot be transcribed).</source>
        <translation>{path} 不是普通文件（管道、设备或文件夹无法转写）。</translation>
    </message>
    <message>
        <source>Save the recording to a file first, then transcribe that file.</source>
        <translation>请先把录音保存为文件，再转写该文件。</translation>
    </message>
    <message>
        <source>{name} is not audio.</source>
        <translation>{name} 不是音频。</translation>
    </message>
    <message>
        <source>Choose a recording: WAV, MP3 or FLAC (other formats: drop them on the chat, which converts them).</source>
        <translation>请选择录音：WAV、MP3 或 FLAC（其他格式请拖放到聊天中，会自动转换）。</translation>
    </message>
    <message>
        <source>{name} is {size}: a recording sent whole to the speech engine can be at most {limit}.</source>
        <translation>{name} 大小为 {size}：整段发送给语音引擎的录音最大为 {limit}。</translation>
    </message>
    <message>
        <source>Convert it to a 16-bit WAV (Strata sends those in pieces, of any length), or cut it shorter.</source>
        <translation>请转换为 16 位 WAV（Strata 会分段发送，长度不限），或把它剪短。</translation>
    </message>
    <message>
        <source>The recording is empty.</source>
        <translation>录音是空的。</translation>
    </message>
    <message>
        <source>Hold the microphone button while you speak.</source>
        <translation>说话时请按住麦克风按钮。</translation>
    </message>
    <message>
        <source>{name} is {kind} audio, which the speech engine cannot read.</source>
        <translation>{name} 是 {kind} 音频，语音引擎无法读取。</translation>
    </message>
    <message>
        <source>Drop it on the chat (Strata converts it there), or convert it to WAV, MP3 or FLAC.</source>
        <translation>请将它拖放到聊天中（Strata 会在那里转换），或转换为 WAV、MP3 或 FLAC。</translation>
    </message>
    <message>
        <source>Whisper does not know the language &apos;{language}&apos;.</source>
        <translation>Whisper 不认识语言“{language}”。</translation>
    </message>
    <message>
        <source>Use a two-letter code such as en, de, fr, zh or ja, or auto to let the engine detect it.</source>
        <translation>请使用两个字母的代码，例如 en、de、fr、zh 或 ja，或用 auto 让引擎自动检测。</translation>
    </message>
    <message>
        <source>No speech engine is installed.</source>
        <translation>没有安装语音引擎。</translation>
    </message>
    <message>
        <source>Add a whisper.cpp build: strata engines add-local FOLDER --kind speech (or the Engines page).</source>
        <translation>请添加一个 whisper.cpp 构建：strata engines add-local 文件夹 --kind speech（或在“引擎”页）。</translation>
    </message>
    <message>
        <source>Transcribing with {engine}…</source>
        <translation>正在用 {engine} 转写…</translation>
    </message>
    <message>
        <source>Transcribed piece {done} of {count}</source>
        <translation>已转写第 {done} 段，共 {count} 段</translation>
    </message>
    <message>
        <source>The speech engine could not read {name} as audio.</source>
        <translation>语音引擎无法将 {name} 读取为音频。</translation>
    </message>
    <message>
        <source>The file may be damaged, or not a WAV, MP3 or FLAC recording.</source>
        <translation>文件可能已损坏，或不是 WAV、MP3 或 FLAC 录音。</translation>
    </message>
    <message>
        <source>The speech engine answered {status}.</source>
        <translation>语音引擎返回了 {status}。</translation>
    </message>
    <message>
        <source>The speech engine sent something that is not a transcript.</source>
        <translation>语音引擎返回的内容不是转写文本。</translation>
    </message>
    <message>
        <source>{model} is not a speech model whisper.cpp can load.</source>
        <translation>{model} 不是 whisper.cpp 能加载的语音模型。</translation>
    </message>
    <message>
        <source>Choose a whisper model (ggml-*.bin).</source>
        <translation>请选择一个 whisper 模型（ggml-*.bin）。</translation>
    </message>
    <message>
        <source>The speech engine was stopped.</source>
        <translation>语音引擎已停止。</translation>
    </message>
    <message>
        <source>No speech engine could transcribe the recording. {reason}</source>
        <translation>没有语音引擎能转写这段录音。{reason}</translation>
    </message>
    <message>
        <source>See the engine log.</source>
        <translation>请查看引擎日志。</translation>
    </message>
</context>
<context>
    <name>DashboardPage</name>
    <message>
        <source>Load %</source>
        <translation>负载 %</translation>
    </message>
    <message>
        <source>Temperature (°C)</source>
        <translation>温度 (°C)</translation>
    </message>
    <message>
        <source>Power (W)</source>
        <translation>功耗 (W)</translation>
    </message>
    <message>
        <source>Core clock (MHz)</source>
        <translation>核心频率 (MHz)</translation>
    </message>
    <message>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <source>OpenAI API</source>
        <translation>OpenAI API</translation>
    </message>
    <message>
        <source>Ollama API</source>
        <translation>Ollama API</translation>
    </message>
    <message>
        <source>Anthropic API</source>
        <translation>Anthropic API</translation>
    </message>
    <message>
        <source>Dashboard</source>
        <translation>仪表盘</translation>
    </message>
    <message>
        <source>Throughput</source>
        <translation>吞吐量</translation>
    </message>
    <message>
        <source>GPU and engine</source>
        <translation>GPU 与引擎</translation>
    </message>
    <message>
        <source>Benchmark</source>
        <translation>基准测试</translation>
    </message>
    <message>
        <source>Prefill and decode speed of every request, GPU and engine over time, and a benchmark of the engines on this machine.</source>
        <translation>每个请求的预填充和解码速度、GPU 与引擎随时间的变化，以及本机各引擎的基准测试。</translation>
    </message>
    <message>
        <source>Tokens per second per request</source>
        <translation>每个请求的 token/s</translation>
    </message>
    <message>
        <source>Prefill</source>
        <translation>预填充</translation>
    </message>
    <message>
        <source>Decode</source>
        <translation>解码</translation>
    </message>
    <message>
        <source>prefill tok/s</source>
        <translation>预填充 tok/s</translation>
    </message>
    <message>
        <source>decode tok/s</source>
        <translation>解码 tok/s</translation>
    </message>
    <message>
        <source>% of limit</source>
        <translation>占上限 %</translation>
    </message>
    <message>
        <source>No engine running.</source>
        <translation>没有正在运行的引擎。</translation>
    </message>
    <message>
        <source>Copy chart</source>
        <translation>复制图表</translation>
    </message>
    <message>
        <source>Export CSV…</source>
        <translation>导出 CSV…</translation>
    </message>
    <message>
        <source>Export JSON…</source>
        <translation>导出 JSON…</translation>
    </message>
    <message>
        <source>No requests yet. Chat with a model and its speed appears here.</source>
        <translation>还没有请求。与模型聊天后，速度会显示在这里。</translation>
    </message>
    <message>
        <source>n/a</source>
        <translation>无</translation>
    </message>
    <message>
        <source>decode median %1 % of the memory limit</source>
        <translation>解码中位数为内存上限的 %1 %</translation>
    </message>
    <message>
        <source>prefill median %1 % of the compute limit</source>
        <translation>预填充中位数为计算上限的 %1 %</translation>
    </message>
    <message numerus="yes">
        <source>%n request(s) to remote engines not in these medians</source>
        <translation>
            <numerusform>另有 %n 个发往远程引擎的请求未计入这些中位数</numerusform>
        </translation>
    </message>
    <message>
        <source>No engine running (or it has metrics off).</source>
        <translation>没有正在运行的引擎（或引擎未开启指标）。</translation>
    </message>
    <message>
        <source>Engine since start: %1 prompt tokens at %2 · %3 generated at %4 · %5 busy, %6 waiting</source>
        <translation>引擎自启动以来：提示 %1 个 token，速度 %2 · 生成 %3 个 token，速度 %4 · %5 个处理中，%6 个排队</translation>
    </message>
    <message>
        <source>Requests now: %1 active · %2 waiting</source>
        <translation>当前请求：进行中 %1 · 等待中 %2</translation>
    </message>
    <message>
        <source>%1: %2 of %3 in use, %4 waiting</source>
        <translation>%1：%3 个中 %2 个在用，%4 个等待中</translation>
    </message>
    <message>
        <source>Exported to %s</source>
        <translation>已导出到 %s</translation>
    </message>
    <message>
        <source>No GPU telemetry on this machine. The engine&apos;s CPU and memory are shown below.</source>
        <translation>本机没有 GPU 遥测数据。下方显示引擎的 CPU 和内存占用。</translation>
    </message>
    <message>
        <source>Engine process</source>
        <translation>引擎进程</translation>
    </message>
    <message>
        <source>CPU %</source>
        <translation>CPU %</translation>
    </message>
    <message>
        <source>VRAM used (GiB)</source>
        <translation>已用显存 (GiB)</translation>
    </message>
    <message>
        <source>Shared used (GiB)</source>
        <translation>已用共享内存 (GiB)</translation>
    </message>
    <message>
        <source>Images</source>
        <translation>图像</translation>
    </message>
    <message>
        <source>Share of the hardware&apos;s limits</source>
        <translation>占硬件上限的比例</translation>
    </message>
    <message>
        <source>Decode of the memory limit</source>
        <translation>解码占内存上限</translation>
    </message>
    <message>
        <source>Prefill of the compute limit</source>
        <translation>预填充占计算上限</translation>
    </message>
    <message numerus="yes">
        <source>%n request(s) · prefill median %2, p90 %3 · decode median %4, p90 %5 · time to first token median %6, p90 %7</source>
        <translation>
            <numerusform>%n 个请求 · 预填充中位数 %2，p90 %3 · 解码中位数 %4，p90 %5 · 首个 token 用时中位数 %6，p90 %7</numerusform>
        </translation>
    </message>
    <message>
        <source>Memory (GiB)</source>
        <translation>内存 (GiB)</translation>
    </message>
    <message>
        <source>Engine: CPU %1 % · memory %2</source>
        <translation>引擎：CPU %1 % · 内存 %2</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source>off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <source>Also measure with this many tokens already in the context: which engine is fastest deep into a long conversation. 0 turns it off.</source>
        <translation>另外在上下文中已有这么多 token 时测量：看长对话深处哪个引擎最快。设为 0 则关闭。</translation>
    </message>
    <message>
        <source>Benchmark this model</source>
        <translation>对此模型做基准测试</translation>
    </message>
    <message>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>Backend</source>
        <translation>后端</translation>
    </message>
    <message>
        <source>Depth</source>
        <translation>深度</translation>
    </message>
    <message>
        <source>Prefill tok/s</source>
        <translation>预填充 tok/s</translation>
    </message>
    <message>
        <source>Decode tok/s</source>
        <translation>解码 tok/s</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Of memory limit</source>
        <translation>占内存上限</translation>
    </message>
    <message>
        <source>Prefill (median)</source>
        <translation>预填充（中位数）</translation>
    </message>
    <message>
        <source>tokens/s</source>
        <translation>token/s</translation>
    </message>
    <message>
        <source>Decode (median)</source>
        <translation>解码（中位数）</translation>
    </message>
    <message>
        <source>Always use this engine for the model</source>
        <translation>此模型始终使用该引擎</translation>
    </message>
    <message>
        <source>Choose automatically</source>
        <translation>自动选择</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Engines</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>Prompt tokens</source>
        <translation>提示 token</translation>
    </message>
    <message>
        <source>Generated tokens</source>
        <translation>生成 token</translation>
    </message>
    <message>
        <source>Repetitions</source>
        <translation>重复次数</translation>
    </message>
    <message>
        <source>Workload</source>
        <translation>测试负载</translation>
    </message>
    <message>
        <source>Of compute limit</source>
        <translation>占计算上限</translation>
    </message>
    <message>
        <source>No working engine installed — install one on the Engines page.</source>
        <translation>没有可用的已安装引擎——请在“引擎”页面安装一个。</translation>
    </message>
    <message>
        <source>Benchmarking %s</source>
        <translation>正在测试 %s</translation>
    </message>
    <message>
        <source>Draft model on {0}: decode {1:,.1f} → {2:,.1f} tok/s (×{3:.2f})</source>
        <translation>草稿模型（{0}）：解码 {1:,.1f} → {2:,.1f} tok/s（×{3:.2f}）</translation>
    </message>
    <message>
        <source>Compute limit on {0}: {1:,.1f} TFLOPS ({2}), {3:,.2f} GFLOP per prompt token. {4}</source>
        <translation>{0} 的计算上限：{1:,.1f} TFLOPS（{2}），每个提示 token {3:,.2f} GFLOP。{4}</translation>
    </message>
    <message>
        <source>{0} % of {1:,.0f} tok/s</source>
        <translation>{1:,.0f} tok/s 的 {0} %</translation>
    </message>
    <message>
        <source>ok</source>
        <translation>正常</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>Memory limit on {0}: {1:,.1f} MB read per token</source>
        <translation>{0} 的内存上限：每个 token 读取 {1:,.1f} MB</translation>
    </message>
    <message>
        <source>Fastest here: %s. </source>
        <translation>本机最快：%s。</translation>
    </message>
    <message>
        <source>No benchmark for this model on this machine yet.</source>
        <translation>此模型在本机还没有基准测试结果。</translation>
    </message>
    <message>
        <source>Default engine: from the engine plan (not measured yet).</source>
        <translation>默认引擎：按引擎计划选择（尚未测量）。</translation>
    </message>
    <message>
        <source>Default engine: %s (chosen by you).</source>
        <translation>默认引擎：%s（由你指定）。</translation>
    </message>
    <message>
        <source>Default engine: %s (automatic, from the benchmark).</source>
        <translation>默认引擎：%s（根据基准测试自动选择）。</translation>
    </message>
</context>
<context>
    <name>DocumentsPanel</name>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Take this document from the conversation</source>
        <translation>从对话中移除此文档</translation>
    </message>
    <message>
        <source>Re-index</source>
        <translation>重新索引</translation>
    </message>
    <message>
        <source>Read the file again and rebuild its index</source>
        <translation>重新读取文件并重建索引</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Passages are found by their words (SQLite full-text search); with an embedding model of the library, also by their meaning</source>
        <translation>按文字查找段落（SQLite 全文搜索）；若使用模型库中的嵌入模型，还会按语义查找</translation>
    </message>
    <message>
        <source>Full-text search only</source>
        <translation>仅全文搜索</translation>
    </message>
    <message>
        <source>Full text and vectors: %1</source>
        <translation>全文和向量：%1</translation>
    </message>
    <message numerus="yes">
        <source>Documents (%n)</source>
        <translation>
            <numerusform>文档（%n）</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>, %n pages</source>
        <translation>
            <numerusform>，%n 页</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n passages</source>
        <translation>
            <numerusform>%n 个段落</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n passages have no vectors yet (the embedding engine failed: %1); full-text search works, and the next question tries again.</source>
        <translation>
            <numerusform>%n 个段落还没有向量（嵌入引擎出错：%1）；全文搜索可用，下一个问题会重试。</numerusform>
        </translation>
    </message>
    <message>
        <source>Attach documents</source>
        <translation>附加文档</translation>
    </message>
    <message>
        <source>Re-index document</source>
        <translation>重新索引文档</translation>
    </message>
    <message>
        <source>Remove document</source>
        <translation>移除文档</translation>
    </message>
</context>
<context>
    <name>DownloadRow</name>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>Waiting in the queue · %1</source>
        <translation>排队等待中 · %1</translation>
    </message>
    <message>
        <source>Starting…</source>
        <translation>正在开始…</translation>
    </message>
    <message>
        <source>Paused · resumes where it stopped</source>
        <translation>已暂停 · 将从中断处继续</translation>
    </message>
    <message>
        <source>Failed: %1</source>
        <translation>失败：%1</translation>
    </message>
    <message>
        <source>Done · in the library</source>
        <translation>已完成 · 已加入模型库</translation>
    </message>
</context>
<context>
    <name>EnginesPage</name>
    <message>
        <source>Works</source>
        <translation>可用</translation>
    </message>
    <message>
        <source>No device</source>
        <translation>无设备</translation>
    </message>
    <message>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>Engines</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>The llama.cpp builds Strata runs models with. Strata picks the fastest one that really works on this machine: ROCm for your GPU&apos;s family, then Vulkan, then the processor.</source>
        <translation>Strata 用来运行模型的 llama.cpp 构建。Strata 会选用在本机真正可用的最快引擎：优先适合你 GPU 系列的 ROCm，其次 Vulkan，最后是处理器。</translation>
    </message>
    <message>
        <source>Set up automatically</source>
        <translation>自动设置</translation>
    </message>
    <message>
        <source>Install and test the planned engines in order until one works</source>
        <translation>按计划顺序安装并测试引擎，直到有一个可用</translation>
    </message>
    <message>
        <source>Refresh plan</source>
        <translation>刷新计划</translation>
    </message>
    <message>
        <source>Text engines (llama.cpp)</source>
        <translation>文本引擎（llama.cpp）</translation>
    </message>
    <message>
        <source>Image engines (stable-diffusion.cpp)</source>
        <translation>图像引擎（stable-diffusion.cpp）</translation>
    </message>
    <message>
        <source>Order</source>
        <translation>顺序</translation>
    </message>
    <message>
        <source>Backend</source>
        <translation>后端</translation>
    </message>
    <message>
        <source>Build</source>
        <translation>构建</translation>
    </message>
    <message>
        <source>Why</source>
        <translation>原因</translation>
    </message>
    <message>
        <source>No plan yet. Press “Refresh plan” to read the available releases.</source>
        <translation>还没有计划。点击“刷新计划”读取可用的发行版本。</translation>
    </message>
    <message>
        <source>Install selected</source>
        <translation>安装所选</translation>
    </message>
    <message>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>Version</source>
        <translation>版本</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Tuning table</source>
        <translation>调优表</translation>
    </message>
    <message>
        <source>No engines installed. “Set up automatically” installs the best one for this machine, or “Add local build…” registers a llama-server you built yourself.</source>
        <translation>尚未安装引擎。“自动设置”会为本机安装最合适的引擎；“添加本地构建…”可登记你自己编译的 llama-server。</translation>
    </message>
    <message>
        <source>Test</source>
        <translation>测试</translation>
    </message>
    <message>
        <source>Promoted</source>
        <translation>已启用</translation>
    </message>
    <message>
        <source>Refused</source>
        <translation>已拒绝</translation>
    </message>
    <message>
        <source>Trial passed</source>
        <translation>试用通过</translation>
    </message>
    <message>
        <source>Rolled back</source>
        <translation>已回滚</translation>
    </message>
    <message>
        <source>Rolled back automatically</source>
        <translation>已自动回滚</translation>
    </message>
    <message>
        <source>Run the engine&apos;s device check with its launch environment</source>
        <translation>使用引擎的启动环境运行其设备检查</translation>
    </message>
    <message>
        <source>Always use</source>
        <translation>始终使用</translation>
    </message>
    <message>
        <source>Update</source>
        <translation>更新</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Add local build…</source>
        <translation>添加本地构建…</translation>
    </message>
    <message>
        <source>Remove old versions</source>
        <translation>移除旧版本</translation>
    </message>
    <message>
        <source>Check for updates</source>
        <translation>检查更新</translation>
    </message>
    <message>
        <source>See which newer builds exist (from the saved list when offline)</source>
        <translation>查看有哪些更新的构建（离线时使用已保存的列表）</translation>
    </message>
    <message>
        <source>Roll back</source>
        <translation>回滚</translation>
    </message>
    <message>
        <source>Use the last good build of this kind again</source>
        <translation>重新使用此类引擎上一个正常的构建</translation>
    </message>
    <message>
        <source>When</source>
        <translation>时间</translation>
    </message>
    <message>
        <source>What</source>
        <translation>操作</translation>
    </message>
    <message>
        <source>Details</source>
        <translation>详情</translation>
    </message>
    <message>
        <source>No engine update has been tried yet. “Update” tries a new build on this machine first and keeps the current one unless the new one works and is not slower.</source>
        <translation>尚未尝试过引擎更新。“更新”会先在本机试用新构建；只有新构建能正常工作且不更慢时才会替换当前构建。</translation>
    </message>
    <message>
        <source>Plan for this machine</source>
        <translation>本机的引擎计划</translation>
    </message>
    <message>
        <source>Not finished</source>
        <translation>未完成</translation>
    </message>
    <message>
        <source>Installed engines</source>
        <translation>已安装的引擎</translation>
    </message>
    <message>
        <source>Update history</source>
        <translation>更新历史</translation>
    </message>
    <message>
        <source>The stable-diffusion.cpp builds the Images page draws with. Strata tries them in the same order: ROCm for your GPU&apos;s family, then Vulkan, then the processor, and moves to the next one when a build cannot load a model.</source>
        <translation>“图像”页用来绘图的 stable-diffusion.cpp 构建。Strata 按同样的顺序尝试：先是适合你 GPU 系列的 ROCm，然后是 Vulkan，最后是处理器；某个构建无法加载模型时会换用下一个。</translation>
    </message>
    <message>
        <source>Planning for: {gpus}</source>
        <translation>规划目标：{gpus}</translation>
    </message>
    <message>
        <source>No AMD GPU known: planning for the processor. Set a gfx target in Settings to plan for a GPU.</source>
        <translation>未发现 AMD GPU：按处理器规划。在“设置”中指定 gfx 目标即可按 GPU 规划。</translation>
    </message>
    <message>
        <source>Stopped.</source>
        <translation>已停止。</translation>
    </message>
    <message>
        <source>Reading releases</source>
        <translation>正在读取发行版本</translation>
    </message>
    <message numerus="yes">
        <source>Plan read: %n build(s) to try, %1 first.</source>
        <translation>
            <numerusform>已读取计划：%n 个构建可试，首先是 %1。</numerusform>
        </translation>
    </message>
    <message>
        <source>Plan read: no build fits this machine; see the reasons below.</source>
        <translation>已读取计划：没有适合此机器的构建；原因见下方。</translation>
    </message>
    <message>
        <source>not used</source>
        <translation>不使用</translation>
    </message>
    <message>
        <source>Installing {name}</source>
        <translation>正在安装 {name}</translation>
    </message>
    <message>
        <source>Setting up the best engine</source>
        <translation>正在设置最佳引擎</translation>
    </message>
    <message>
        <source>Setting up the image engines</source>
        <translation>正在设置图像引擎</translation>
    </message>
    <message>
        <source>Using {engine}.</source>
        <translation>正在使用 {engine}。</translation>
    </message>
    <message>
        <source>No engine works on this machine; see the states below.</source>
        <translation>本机没有可用的引擎；请查看下方的状态。</translation>
    </message>
    <message>
        <source>Not tested yet</source>
        <translation>尚未测试</translation>
    </message>
    <message>
        <source>  (always used)</source>
        <translation>（始终使用）</translation>
    </message>
    <message>
        <source>  · update {tag} available</source>
        <translation> · 有可用更新 {tag}</translation>
    </message>
    <message>
        <source>  · unverified download</source>
        <translation> · 下载未经校验</translation>
    </message>
    <message>
        <source>{asset} had no published checksum, so this engine could not be verified against its publisher&apos;s build.</source>
        <translation>{asset} 没有公布校验和，因此无法对照发布者的构建校验此引擎。</translation>
    </message>
    <message>
        <source>No image engines installed. “Set up automatically” installs the best one for this machine, or “Add local build…” registers an sd-server you built yourself.</source>
        <translation>尚未安装图像引擎。“自动设置”会为本机安装最合适的引擎，“添加本地构建…”可登记你自己编译的 sd-server。</translation>
    </message>
    <message>
        <source>Speech engines (whisper.cpp)</source>
        <translation>语音引擎（whisper.cpp）</translation>
    </message>
    <message>
        <source>The whisper.cpp builds that turn speech into text (the chat&apos;s microphone, dropped recordings, /v1/audio/transcriptions). Tried in the same order: ROCm, Vulkan, then the processor.</source>
        <translation>将语音转为文字的 whisper.cpp 构建（聊天的麦克风、拖放的录音、/v1/audio/transcriptions）。按同样的顺序尝试：ROCm、Vulkan，然后是处理器。</translation>
    </message>
    <message>
        <source>Setting up the speech engines</source>
        <translation>正在设置语音引擎</translation>
    </message>
    <message>
        <source>No speech engines installed. whisper.cpp publishes Windows builds only: on Linux, “Add local build…” registers a whisper-server you built yourself.</source>
        <translation>没有安装语音引擎。whisper.cpp 只发布 Windows 构建：在 Linux 上，“添加本地构建…”可以注册你自己构建的 whisper-server。</translation>
    </message>
    <message>
        <source>not used by this backend</source>
        <translation>此后端不使用</translation>
    </message>
    <message>
        <source>none for this build</source>
        <translation>此构建没有</translation>
    </message>
    <message>
        <source>valid: prefill uses tuned kernels</source>
        <translation>有效：预填充使用调优内核</translation>
    </message>
    <message>
        <source>Testing engines</source>
        <translation>正在测试引擎</translation>
    </message>
    <message>
        <source>No engines installed.</source>
        <translation>未安装引擎。</translation>
    </message>
    <message>
        <source>Trying {tag} on this machine</source>
        <translation>正在本机试用 {tag}</translation>
    </message>
    <message>
        <source>Updating {engine}</source>
        <translation>正在更新 {engine}</translation>
    </message>
    <message>
        <source>Looking for a newer build of {engine}</source>
        <translation>正在查找 {engine} 的更新构建</translation>
    </message>
    <message>
        <source>Checking for updates</source>
        <translation>正在检查更新</translation>
    </message>
    <message numerus="yes">
        <source>%n newer build(s) found; see above.</source>
        <translation>
            <numerusform>找到 %n 个更新的构建；见上方。</numerusform>
        </translation>
    </message>
    <message>
        <source>{backend} {tag} ({date}) is available; you use {current}. &lt;a href=&quot;{url}&quot;&gt;Release notes&lt;/a&gt;</source>
        <translation>{backend} {tag}（{date}）已发布；你正在使用 {current}。&lt;a href=&quot;{url}&quot;&gt;发行说明&lt;/a&gt;</translation>
    </message>
    <message>
        <source> (from the saved release list)</source>
        <translation>（来自已保存的发布列表）</translation>
    </message>
    <message>
        <source>Not tried: {why}.</source>
        <translation>未试用：{why}。</translation>
    </message>
    <message>
        <source>  · last good build (kept to roll back to)</source>
        <translation> · 上一个正常的构建（保留以便回滚）</translation>
    </message>
    <message>
        <source>  · in use since its update</source>
        <translation> · 更新后正在使用</translation>
    </message>
    <message>
        <source>Removed: {ids}</source>
        <translation>已移除：{ids}</translation>
    </message>
    <message>
        <source>No old versions to remove.</source>
        <translation>没有可移除的旧版本。</translation>
    </message>
    <message>
        <source>Folder holding %1</source>
        <translation>包含 %1 的文件夹</translation>
    </message>
    <message>
        <source>Detect from the build (recommended)</source>
        <translation>根据构建自动识别（推荐）</translation>
    </message>
    <message>
        <source>Add local build</source>
        <translation>添加本地构建</translation>
    </message>
    <message>
        <source>This build&apos;s backend:</source>
        <translation>此构建的后端：</translation>
    </message>
    <message>
        <source>Testing {folder}</source>
        <translation>正在测试 {folder}</translation>
    </message>
    <message>
        <source>Choose automatically</source>
        <translation>自动选择</translation>
    </message>
</context>
<context>
    <name>ErrorDialog</name>
    <message>
        <source>Something went wrong</source>
        <translation>出错了</translation>
    </message>
    <message>
        <source>Settings problem</source>
        <translation>设置问题</translation>
    </message>
    <message>
        <source>Storage problem</source>
        <translation>存储问题</translation>
    </message>
    <message>
        <source>Not enough disk space</source>
        <translation>磁盘空间不足</translation>
    </message>
    <message>
        <source>Network problem</source>
        <translation>网络问题</translation>
    </message>
    <message>
        <source>Rate limited</source>
        <translation>请求过于频繁</translation>
    </message>
    <message>
        <source>Download corrupted</source>
        <translation>下载的文件已损坏</translation>
    </message>
    <message>
        <source>GPU detection problem</source>
        <translation>GPU 检测问题</translation>
    </message>
    <message>
        <source>Engine problem</source>
        <translation>引擎问题</translation>
    </message>
    <message>
        <source>Engine catalog problem</source>
        <translation>引擎目录问题</translation>
    </message>
    <message>
        <source>Engine download failed</source>
        <translation>引擎下载失败</translation>
    </message>
    <message>
        <source>Engine install failed</source>
        <translation>引擎安装失败</translation>
    </message>
    <message>
        <source>Unsafe archive</source>
        <translation>不安全的压缩包</translation>
    </message>
    <message>
        <source>Engine does not run here</source>
        <translation>引擎无法在本机运行</translation>
    </message>
    <message>
        <source>Tuning table rejected</source>
        <translation>调优表被拒绝</translation>
    </message>
    <message>
        <source>Model problem</source>
        <translation>模型问题</translation>
    </message>
    <message>
        <source>Not a valid GGUF file</source>
        <translation>不是有效的 GGUF 文件</translation>
    </message>
    <message>
        <source>Hugging Face hub problem</source>
        <translation>Hugging Face Hub 问题</translation>
    </message>
    <message>
        <source>Engine server problem</source>
        <translation>引擎服务器问题</translation>
    </message>
    <message>
        <source>Chat problem</source>
        <translation>聊天问题</translation>
    </message>
    <message>
        <source>Image problem</source>
        <translation>图像问题</translation>
    </message>
    <message>
        <source>Speech problem</source>
        <translation>语音问题</translation>
    </message>
    <message>
        <source>Document problem</source>
        <translation>文档问题</translation>
    </message>
    <message>
        <source>Engines busy</source>
        <translation>引擎繁忙</translation>
    </message>
    <message>
        <source>Tool problem</source>
        <translation>工具问题</translation>
    </message>
    <message>
        <source>Reply does not fit the chat format</source>
        <translation>回复不符合聊天格式</translation>
    </message>
    <message>
        <source>Unknown model</source>
        <translation>未知模型</translation>
    </message>
    <message>
        <source>Wrong kind of model</source>
        <translation>模型类型不对</translation>
    </message>
    <message>
        <source>Show details</source>
        <translation>显示详情</translation>
    </message>
    <message>
        <source>Copy details</source>
        <translation>复制详情</translation>
    </message>
    <message>
        <source>Open log</source>
        <translation>打开日志</translation>
    </message>
    <message>
        <source>Hide details</source>
        <translation>隐藏详情</translation>
    </message>
</context>
<context>
    <name>FindBar</name>
    <message>
        <source>Find in this conversation</source>
        <translation>在此对话中查找</translation>
    </message>
    <message>
        <source>Previous match (Shift+Enter)</source>
        <translation>上一个匹配（Shift+Enter）</translation>
    </message>
    <message>
        <source>Next match (Enter)</source>
        <translation>下一个匹配（Enter）</translation>
    </message>
    <message>
        <source>Close (Esc)</source>
        <translation>关闭（Esc）</translation>
    </message>
    <message>
        <source>No matches</source>
        <translation>无匹配</translation>
    </message>
    <message>
        <source>{0} of {1}</source>
        <translation>第 {0} 个，共 {1} 个</translation>
    </message>
</context>
<context>
    <name>FirstRunGuide</name>
    <message>
        <source>Welcome to Strata</source>
        <translation>欢迎使用 Strata</translation>
    </message>
    <message>
        <source>Skip guide</source>
        <translation>跳过向导</translation>
    </message>
    <message>
        <source>You can run the guide again from Settings.</source>
        <translation>你可以在“设置”中再次运行此向导。</translation>
    </message>
    <message>
        <source>Back</source>
        <translation>上一步</translation>
    </message>
    <message>
        <source>Strata looks at your graphics hardware and picks the llama.cpp engine that runs models fastest on it.</source>
        <translation>Strata 会检查你的图形硬件，并选出在其上运行模型最快的 llama.cpp 引擎。</translation>
    </message>
    <message>
        <source>Your hardware</source>
        <translation>你的硬件</translation>
    </message>
    <message>
        <source>Detecting GPUs…</source>
        <translation>正在检测 GPU…</translation>
    </message>
    <message>
        <source>Engine plan</source>
        <translation>引擎计划</translation>
    </message>
    <message>
        <source>Checking the available engine builds…</source>
        <translation>正在检查可用的引擎构建…</translation>
    </message>
    <message>
        <source>Pick a model to start with. Each one is judged against your GPU&apos;s memory; you can download others later from the Models page.</source>
        <translation>选择一个模型开始使用。每个模型都已按你的 GPU 显存评估过；以后还可以在“模型”页面下载其他模型。</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <source>On this computer</source>
        <translation>在本机上</translation>
    </message>
    <message>
        <source>I already have a model: Open GGUF…</source>
        <translation>我已有模型：打开 GGUF…</translation>
    </message>
    <message>
        <source>Everything is in place</source>
        <translation>一切就绪</translation>
    </message>
    <message>
        <source>The engine starts when you send your first message; loading a model takes a few seconds. Settings → &quot;Run the first-run guide again&quot; brings this guide back.</source>
        <translation>发送第一条消息时引擎才会启动；加载模型需要几秒钟。通过“设置”→“重新运行首次使用向导”可再次打开此向导。</translation>
    </message>
    <message>
        <source>Use a llama.cpp build you already have</source>
        <translation>使用你已有的 llama.cpp 构建</translation>
    </message>
    <message>
        <source>Choose the folder that holds llama-server (for example build/bin) and the backend it was built with.</source>
        <translation>选择 llama-server 所在的文件夹（例如 build/bin）以及它编译时使用的后端。</translation>
    </message>
    <message>
        <source>Add local build…</source>
        <translation>添加本地构建…</translation>
    </message>
    <message>
        <source>Backend:</source>
        <translation>后端：</translation>
    </message>
    <message>
        <source>Use a model file you already have</source>
        <translation>使用你已有的模型文件</translation>
    </message>
    <message>
        <source>Any .gguf file works; split models: choose the first part.</source>
        <translation>任何 .gguf 文件都可以；分卷模型请选择第一个分卷。</translation>
    </message>
    <message>
        <source>Open GGUF…</source>
        <translation>打开 GGUF…</translation>
    </message>
    <message>
        <source>Try again</source>
        <translation>重试</translation>
    </message>
    <message>
        <source>Your GPU and engine</source>
        <translation>你的 GPU 与引擎</translation>
    </message>
    <message>
        <source>Choose a starter model</source>
        <translation>选择入门模型</translation>
    </message>
    <message>
        <source>Ready to chat</source>
        <translation>可以开始聊天了</translation>
    </message>
    <message>
        <source>Set up without a connection</source>
        <translation>离线设置</translation>
    </message>
    <message>
        <source>GPU and engine</source>
        <translation>GPU 与引擎</translation>
    </message>
    <message>
        <source>Starter model</source>
        <translation>入门模型</translation>
    </message>
    <message>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <source>Next</source>
        <translation>下一步</translation>
    </message>
    <message>
        <source>Download engine</source>
        <translation>下载引擎</translation>
    </message>
    <message>
        <source>Download model</source>
        <translation>下载模型</translation>
    </message>
    <message>
        <source>Open chat</source>
        <translation>打开聊天</translation>
    </message>
    <message>
        <source>Check GPU and engines</source>
        <translation>检查 GPU 和引擎</translation>
    </message>
    <message>
        <source>Strata is in offline mode, so it will not download engines or models. You can use what you already have on this computer.</source>
        <translation>Strata 处于离线模式，不会下载引擎或模型。你可以使用本机已有的引擎和模型。</translation>
    </message>
    <message>
        <source>Strata could not reach the engine releases: %s</source>
        <translation>Strata 无法获取引擎发行版本：%s</translation>
    </message>
    <message>
        <source>No graphics card was found. Models will run on the processor (slower, but everything works).</source>
        <translation>未找到显卡。模型将在处理器上运行（较慢，但功能完整）。</translation>
    </message>
    <message>
        <source>%s shared memory</source>
        <translation>%s 共享内存</translation>
    </message>
    <message>
        <source>%s VRAM</source>
        <translation>%s 显存</translation>
    </message>
    <message>
        <source>Hardware: %s</source>
        <translation>硬件：%s</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <source> (recommended)</source>
        <translation>（推荐）</translation>
    </message>
    <message>
        <source>No engine build for this computer was found in the releases.</source>
        <translation>发行版本中没有适合本机的引擎构建。</translation>
    </message>
    <message>
        <source>Already installed and working: %s. Nothing to download.</source>
        <translation>已安装且可用：%s。无需下载。</translation>
    </message>
    <message>
        <source>Strata downloads the first build and checks that it runs; if it cannot use your GPU, it tries the next one.</source>
        <translation>Strata 会下载第一个构建并检查它能否运行；如果它无法使用你的 GPU，就尝试下一个。</translation>
    </message>
    <message>
        <source>Downloading the engine</source>
        <translation>正在下载引擎</translation>
    </message>
    <message>
        <source>The engine could not be installed: %s</source>
        <translation>无法安装引擎：%s</translation>
    </message>
    <message>
        <source>Cancelled: no engine was installed. The part already downloaded is kept, so trying again continues where it stopped.</source>
        <translation>已取消：未安装任何引擎。已下载的部分会保留，重试时将从中断处继续。</translation>
    </message>
    <message>
        <source>• nothing could be tried</source>
        <translation>• 没有可尝试的构建</translation>
    </message>
    <message>
        <source>No engine works on this computer yet:
%s
Add a local build from the Engines page, or try again later.</source>
        <translation>本机暂时没有可用的引擎：
%s
请在“引擎”页面添加本地构建，或稍后重试。</translation>
    </message>
    <message>
        <source>Installed: %s</source>
        <translation>已安装：%s</translation>
    </message>
    <message>
        <source>Judged for %1: %2 usable, %3-token context</source>
        <translation>按 %1 评估：可用 %2，上下文 %3 个 token</translation>
    </message>
    <message>
        <source>No GPU memory known: judged for the processor and %1 of RAM.</source>
        <translation>GPU 显存未知：按处理器和 %1 内存评估。</translation>
    </message>
    <message>
        <source>Fits fully on the GPU</source>
        <translation>可完全放入 GPU</translation>
    </message>
    <message>
        <source>Partly on the GPU (%1 of %2 layers)</source>
        <translation>部分放入 GPU（%2 层中的 %1 层）</translation>
    </message>
    <message>
        <source>Fits in system RAM — runs on the CPU</source>
        <translation>可放入系统内存 — 在 CPU 上运行</translation>
    </message>
    <message>
        <source>Too large for this computer</source>
        <translation>对本机来说太大</translation>
    </message>
    <message>
        <source> Licence: %s.</source>
        <translation> 许可证：%s。</translation>
    </message>
    <message>
        <source>Looking up %s</source>
        <translation>正在查找 %s</translation>
    </message>
    <message>
        <source>Download %s</source>
        <translation>下载 %s</translation>
    </message>
    <message>
        <source>Downloading %s</source>
        <translation>正在下载 %s</translation>
    </message>
    <message>
        <source>The download failed: %s</source>
        <translation>下载失败：%s</translation>
    </message>
    <message>
        <source>Download cancelled.</source>
        <translation>下载已取消。</translation>
    </message>
    <message>
        <source>Engine: %s</source>
        <translation>引擎：%s</translation>
    </message>
    <message>
        <source>none yet (add one on the Engines page)</source>
        <translation>暂无（请在“引擎”页面添加）</translation>
    </message>
    <message>
        <source>Model: %s</source>
        <translation>模型：%s</translation>
    </message>
    <message>
        <source>Already installed and working: %s.</source>
        <translation>已安装且可用：%s。</translation>
    </message>
    <message>
        <source>Add local build</source>
        <translation>添加本地构建</translation>
    </message>
    <message>
        <source>Checking %s…</source>
        <translation>正在检查 %s…</translation>
    </message>
    <message>
        <source>Not added: %s</source>
        <translation>未添加：%s</translation>
    </message>
    <message>
        <source>Added %s: %s</source>
        <translation>已添加 %s：%s</translation>
    </message>
    <message>
        <source>Added %s, but it does not run here: %s</source>
        <translation>已添加 %s，但它无法在本机运行：%s</translation>
    </message>
    <message>
        <source>Open GGUF</source>
        <translation>打开 GGUF</translation>
    </message>
    <message>
        <source>Cannot use this file: %s</source>
        <translation>无法使用此文件：%s</translation>
    </message>
    <message>
        <source>Ready: %s (%s)</source>
        <translation>就绪：%s（%s）</translation>
    </message>
</context>
<context>
    <name>GpuCard</name>
    <message>
        <source>Integrated (APU)</source>
        <translation>集成显卡 (APU)</translation>
    </message>
    <message>
        <source>Discrete</source>
        <translation>独立显卡</translation>
    </message>
    <message>
        <source>gfx target unknown</source>
        <translation>gfx 目标未知</translation>
    </message>
    <message>
        <source>n/a (not AMD)</source>
        <translation>无（非 AMD）</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <source>n/a</source>
        <translation>无</translation>
    </message>
    <message>
        <source>gfx target</source>
        <translation>gfx 目标</translation>
    </message>
    <message>
        <source>ROCm family</source>
        <translation>ROCm 系列</translation>
    </message>
    <message>
        <source>Driver</source>
        <translation>驱动</translation>
    </message>
    <message>
        <source>PCI</source>
        <translation>PCI</translation>
    </message>
    <message>
        <source>VRAM carve-out</source>
        <translation>预留显存</translation>
    </message>
    <message>
        <source>VRAM</source>
        <translation>显存</translation>
    </message>
    <message>
        <source>Shared system memory (GTT)</source>
        <translation>共享系统内存 (GTT)</translation>
    </message>
    <message>
        <source>Shared system memory</source>
        <translation>共享系统内存</translation>
    </message>
    <message>
        <source>Models can use up to %s on this APU (carve-out + shared memory).</source>
        <translation>在这台 APU 上，模型最多可使用 %s（预留显存 + 共享内存）。</translation>
    </message>
    <message>
        <source>Load</source>
        <translation>负载</translation>
    </message>
    <message>
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <source>Power (CPU + GPU)</source>
        <translation>功耗（CPU + GPU）</translation>
    </message>
    <message>
        <source>Power</source>
        <translation>功耗</translation>
    </message>
    <message>
        <source>Core clock: %s</source>
        <translation>核心频率：%s</translation>
    </message>
    <message>
        <source>Strata shows live load, temperature and power for AMD GPUs only.</source>
        <translation>Strata 仅显示 AMD GPU 的实时负载、温度和功耗。</translation>
    </message>
    <message>
        <source>ROCm works: %s passed its check on this GPU</source>
        <translation>ROCm 可用：%s 已在此 GPU 上通过检查</translation>
    </message>
    <message>
        <source>%s — the installed %s is not checked yet</source>
        <translation>%s — 已安装的 %s 尚未检查</translation>
    </message>
    <message>
        <source>ROCm does not work here yet: the installed %s failed its check (%s). Strata uses the next engine.</source>
        <translation>ROCm 目前在此无法使用：已安装的 %s 未通过检查（%s）。Strata 改用下一个引擎。</translation>
    </message>
    <message>
        <source>ROCm via %s build</source>
        <translation>ROCm（使用 %s 构建）</translation>
    </message>
    <message>
        <source>Vulkan only: no ROCm build for %s</source>
        <translation>仅支持 Vulkan：没有适用于 %s 的 ROCm 构建</translation>
    </message>
    <message>
        <source>Unknown target: this GPU is newer than Strata&apos;s table. The Vulkan engine works; a ROCm engine&apos;s start-up can name its gfx target.</source>
        <translation>未知目标：这块 GPU 比 Strata 的对照表更新。Vulkan 引擎可用；ROCm 引擎启动时可以识别其 gfx 目标。</translation>
    </message>
    <message>
        <source>Not ROCm-eligible (%s GPU); the Vulkan engine may use it</source>
        <translation>不支持 ROCm（%s GPU）；Vulkan 引擎也许可以使用它</translation>
    </message>
    <message>
        <source>%s: ROCm family unknown (engine catalog not loaded)</source>
        <translation>%s：ROCm 系列未知（引擎目录未加载）</translation>
    </message>
    <message>
        <source>Asleep to save power: it wakes when a model runs on it</source>
        <translation>已休眠以节省电量：有模型在其上运行时会唤醒</translation>
    </message>
</context>
<context>
    <name>GpuPage</name>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Detect again</source>
        <translation>重新检测</translation>
    </message>
    <message>
        <source>Copy system report</source>
        <translation>复制系统报告</translation>
    </message>
    <message>
        <source>Copies a text report with a snapshot others can replay (strata gpu --snapshot FILE).</source>
        <translation>复制一份文本报告，其中的快照可供他人重放（strata gpu --snapshot FILE）。</translation>
    </message>
    <message>
        <source>This computer</source>
        <translation>本机</translation>
    </message>
    <message>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>RAM</source>
        <translation>内存</translation>
    </message>
    <message>
        <source>Remote devices (RPC workers)</source>
        <translation>远程设备（RPC 工作节点）</translation>
    </message>
    <message>
        <source>Models run on</source>
        <translation>模型运行于</translation>
    </message>
    <message>
        <source>Let Strata choose</source>
        <translation>由 Strata 选择</translation>
    </message>
    <message>
        <source>The discrete AMD GPU with the most memory; an integrated GPU only when there is no discrete one.</source>
        <translation>显存最大的 AMD 独立显卡；没有独立显卡时才使用集成显卡。</translation>
    </message>
    <message>
        <source>Use ROCm anyway (I have checked this driver works)</source>
        <translation>仍然使用 ROCm（我已确认此驱动可用）</translation>
    </message>
    <message>
        <source>Open this page to detect GPUs.</source>
        <translation>打开此页面以检测 GPU。</translation>
    </message>
    <message>
        <source>The graphics processors Strata sees, how much memory models can use, and whether the ROCm engines can drive them.</source>
        <translation>Strata 检测到的图形处理器、模型可用的内存，以及 ROCm 引擎能否驱动它们。</translation>
    </message>
    <message>
        <source>Detecting GPUs…</source>
        <translation>正在检测 GPU…</translation>
    </message>
    <message>
        <source>Detecting GPUs</source>
        <translation>正在检测 GPU</translation>
    </message>
    <message>
        <source>GPU detection failed: %s</source>
        <translation>GPU 检测失败：%s</translation>
    </message>
    <message>
        <source> (%d threads)</source>
        <translation>（%d 线程）</translation>
    </message>
    <message>
        <source>Source: %s</source>
        <translation>来源：%s</translation>
    </message>
    <message>
        <source>&lt;b&gt;No AMD GPU found.&lt;/b&gt; Chat still works on the CPU engine — just slower. An AMD Radeon GPU or Ryzen AI APU lets Strata use the ROCm or Vulkan engines.</source>
        <translation>&lt;b&gt;未找到 AMD GPU。&lt;/b&gt;聊天仍可使用 CPU 引擎，只是较慢。有了 AMD Radeon GPU 或 Ryzen AI APU，Strata 就能使用 ROCm 或 Vulkan 引擎。</translation>
    </message>
    <message>
        <source>The Vulkan engine may also run on the GPU listed below.</source>
        <translation>Vulkan 引擎也可能在下列 GPU 上运行。</translation>
    </message>
    <message>
        <source>Driver check: %s. You chose to use ROCm anyway.</source>
        <translation>驱动检查：%s。您已选择仍然使用 ROCm。</translation>
    </message>
    <message>
        <source>Driver check: %s. Strata uses the Vulkan engine instead of ROCm.</source>
        <translation>驱动检查：%s。Strata 将改用 Vulkan 引擎而不是 ROCm。</translation>
    </message>
    <message>
        <source>the processor</source>
        <translation>处理器</translation>
    </message>
    <message>
        <source>The engine ({0}) reports: {1}</source>
        <translation>引擎（{0}）报告：{1}</translation>
    </message>
    <message>
        <source>Models run on the CPU, not the GPU ticked above: {0}</source>
        <translation>模型在 CPU 上运行，而不是上面勾选的 GPU：{0}</translation>
    </message>
    <message>
        <source>This is not the GPU ticked above.</source>
        <translation>这不是上面勾选的 GPU。</translation>
    </message>
    <message>
        <source>%1 on %2 — %3 MiB free of %4 MiB</source>
        <translation>%2 上的 %1——可用 %3 MiB / 共 %4 MiB</translation>
    </message>
    <message>
        <source>Report copied — paste it into a bug report.</source>
        <translation>报告已复制——请粘贴到问题报告中。</translation>
    </message>
</context>
<context>
    <name>ImageDashboard</name>
    <message>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>Backend</source>
        <translation>后端</translation>
    </message>
    <message>
        <source>Images</source>
        <translation>图像</translation>
    </message>
    <message>
        <source>Seconds per image</source>
        <translation>每张秒数</translation>
    </message>
    <message>
        <source>Seconds per step</source>
        <translation>每步秒数</translation>
    </message>
    <message>
        <source>No images yet. Make one on the Images page and its speed appears here.</source>
        <translation>还没有图像。在“图像”页生成一张，速度会显示在这里。</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Image size (square)</source>
        <translation>图像尺寸（正方形）</translation>
    </message>
    <message>
        <source>Steps</source>
        <translation>步数</translation>
    </message>
    <message>
        <source>Timed runs per engine</source>
        <translation>每个引擎的计时次数</translation>
    </message>
    <message>
        <source>Benchmark this model</source>
        <translation>对此模型进行基准测试</translation>
    </message>
    <message>
        <source>Each image engine makes the same image: one warm-up, then the timed runs. Nothing is added to the gallery.</source>
        <translation>每个图像引擎生成同一张图像：先预热一次，然后计时运行。不会添加到图库。</translation>
    </message>
    <message>
        <source>Images per minute (benchmark)</source>
        <translation>每分钟图像数（基准测试）</translation>
    </message>
    <message>
        <source>images/min</source>
        <translation>张/分钟</translation>
    </message>
    <message>
        <source>Copy chart</source>
        <translation>复制图表</translation>
    </message>
    <message>
        <source>Measured while you made images</source>
        <translation>生成图像时的测量结果</translation>
    </message>
    <message>
        <source>Benchmark an image model</source>
        <translation>图像模型基准测试</translation>
    </message>
    <message>
        <source>Choose an image model first (the library&apos;s image models are listed).</source>
        <translation>请先选择一个图像模型（列出的是模型库中的图像模型）。</translation>
    </message>
    <message>
        <source>Benchmarking %1</source>
        <translation>正在测试 %1</translation>
    </message>
    <message>
        <source>Benchmark cancelled.</source>
        <translation>基准测试已取消。</translation>
    </message>
    <message>
        <source>No image engine finished the benchmark: see the engine logs.</source>
        <translation>没有图像引擎完成基准测试：请查看引擎日志。</translation>
    </message>
    <message>
        <source>Fastest here: %1, %2 s per image (%3 s per step).</source>
        <translation>本机最快：%1，每张 %2 秒（每步 %3 秒）。</translation>
    </message>
</context>
<context>
    <name>ImageThumb</name>
    <message>
        <source>Pasted image</source>
        <translation>粘贴的图片</translation>
    </message>
</context>
<context>
    <name>ImagesPage</name>
    <message>
        <source>Images</source>
        <translation>图像</translation>
    </message>
    <message>
        <source>Describe a picture and a local Stable Diffusion model draws it on this computer. Every image is saved with its settings, so you can make it again.</source>
        <translation>描述一幅画面，本地 Stable Diffusion 模型会在这台电脑上把它画出来。每张图片都会连同设置一起保存，便于再次生成。</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source>Set up image engines…</source>
        <translation>设置图像引擎…</translation>
    </message>
    <message>
        <source>A lighthouse on a cliff at dawn, oil painting</source>
        <translation>黎明时悬崖上的灯塔，油画</translation>
    </message>
    <message>
        <source>What to keep out (optional): blurry, text</source>
        <translation>不想出现的内容（可选）：模糊、文字</translation>
    </message>
    <message>
        <source>Random</source>
        <translation>随机</translation>
    </message>
    <message>
        <source>The first image&apos;s seed; the next images of the batch use the next seeds.</source>
        <translation>第一张图像的种子；同一批中的后续图像依次使用下一个种子。</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Prompt</source>
        <translation>提示词</translation>
    </message>
    <message>
        <source>Negative prompt</source>
        <translation>反向提示词</translation>
    </message>
    <message>
        <source>Size</source>
        <translation>尺寸</translation>
    </message>
    <message>
        <source>Steps</source>
        <translation>步数</translation>
    </message>
    <message>
        <source>CFG scale</source>
        <translation>CFG 强度</translation>
    </message>
    <message>
        <source>Sampler</source>
        <translation>采样器</translation>
    </message>
    <message>
        <source>Seed</source>
        <translation>种子</translation>
    </message>
    <message>
        <source>Generate</source>
        <translation>生成</translation>
    </message>
    <message>
        <source>Make the images (Ctrl+Enter)</source>
        <translation>生成图像（Ctrl+Enter）</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Stop drawing and free the engine (Esc)</source>
        <translation>停止绘制并释放引擎（Esc）</translation>
    </message>
    <message>
        <source>Your images appear here.</source>
        <translation>生成的图像会显示在这里。</translation>
    </message>
    <message>
        <source>Use these settings again</source>
        <translation>再次使用这些设置</translation>
    </message>
    <message>
        <source>Copy image</source>
        <translation>复制图像</translation>
    </message>
    <message>
        <source>Open folder</source>
        <translation>打开文件夹</translation>
    </message>
    <message>
        <source>The Images page draws with image models (Stable Diffusion, FLUX…); chat with this one on the Chat page.</source>
        <translation>“图像”页面使用图像模型（Stable Diffusion、FLUX…）绘图；请在“聊天”页面与此模型对话。</translation>
    </message>
    <message>
        <source>No image model yet: get one on the Models page, or Browse… for a file (.gguf or .safetensors).</source>
        <translation>还没有图像模型：请在“模型”页获取，或点击“浏览…”选择文件（.gguf 或 .safetensors）。</translation>
    </message>
    <message>
        <source>No image engine installed: install one on the Engines page.</source>
        <translation>尚未安装图像引擎：请在“引擎”页安装。</translation>
    </message>
    <message>
        <source>Draws on %1</source>
        <translation>使用 %1 绘制</translation>
    </message>
    <message>
        <source>then %1 if it fails</source>
        <translation>失败时改用 %1</translation>
    </message>
    <message>
        <source>Choose an image model first.</source>
        <translation>请先选择一个图像模型。</translation>
    </message>
    <message>
        <source>Get one on the Models page, or Browse… for a file.</source>
        <translation>请在“模型”页获取，或点击“浏览…”选择文件。</translation>
    </message>
    <message>
        <source>Starting…</source>
        <translation>正在启动…</translation>
    </message>
    <message>
        <source>Cancelled; the engine was stopped.</source>
        <translation>已取消；引擎已停止。</translation>
    </message>
    <message>
        <source>Cancelling…</source>
        <translation>正在取消…</translation>
    </message>
    <message numerus="yes">
        <source>%n image(s) in %1 s on %2</source>
        <translation>
            <numerusform>%n 张图像，用时 %1 秒，引擎 %2</numerusform>
        </translation>
    </message>
    <message>
        <source>%1 s per step</source>
        <translation>每步 %1 秒</translation>
    </message>
    <message>
        <source>Loading the model on %1…</source>
        <translation>正在 %1 上加载模型…</translation>
    </message>
    <message>
        <source>Saving…</source>
        <translation>正在保存…</translation>
    </message>
    <message>
        <source>Image %1 of %2 · step %3 of %4</source>
        <translation>第 %1/%2 张 · 第 %3/%4 步</translation>
    </message>
    <message numerus="yes">
        <source>Gallery · %n image(s)</source>
        <translation>
            <numerusform>图库 · %n 张图像</numerusform>
        </translation>
    </message>
    <message>
        <source>Gallery · empty: the images you make are kept here.</source>
        <translation>图库 · 空：你生成的图像会保存在这里。</translation>
    </message>
    <message>
        <source>Not: %1</source>
        <translation>排除：%1</translation>
    </message>
    <message numerus="yes">
        <source>%n step(s)</source>
        <translation>
            <numerusform>%n 步</numerusform>
        </translation>
    </message>
    <message>
        <source>seed %1</source>
        <translation>种子 %1</translation>
    </message>
    <message>
        <source>%1 s</source>
        <translation>%1 秒</translation>
    </message>
    <message>
        <source>Settings loaded, but %1 (the model that drew it) is not in your library: Browse… for it, or Generate with the model shown.</source>
        <translation>设置已载入，但绘制它的模型 %1 不在你的模型库中：请用“浏览…”找到它，或用当前显示的模型生成。</translation>
    </message>
    <message>
        <source>Settings of the selected image loaded: Generate makes it again.</source>
        <translation>已载入所选图像的设置：点击“生成”即可再次生成。</translation>
    </message>
    <message>
        <source>Image copied.</source>
        <translation>图像已复制。</translation>
    </message>
    <message>
        <source>Could not create %1: %2</source>
        <translation>无法创建 %1：%2</translation>
    </message>
</context>
<context>
    <name>ImportDialog</name>
    <message>
        <source>Import tool servers</source>
        <translation>导入工具服务器</translation>
    </message>
    <message>
        <source>Open file…</source>
        <translation>打开文件…</translation>
    </message>
    <message>
        <source>The mcpServers JSON of Claude Desktop, Cursor or LM Studio:</source>
        <translation>Claude Desktop、Cursor 或 LM Studio 的 mcpServers JSON：</translation>
    </message>
    <message>
        <source>Open an mcpServers JSON file</source>
        <translation>打开 mcpServers JSON 文件</translation>
    </message>
    <message>
        <source>JSON files (*.json);;All files (*)</source>
        <translation>JSON 文件 (*.json);;所有文件 (*)</translation>
    </message>
</context>
<context>
    <name>LoadOptionsPanel</name>
    <message>
        <source>Load options</source>
        <translation>加载选项</translation>
    </message>
    <message>
        <source>default</source>
        <translation>默认</translation>
    </message>
    <message>
        <source>from the model</source>
        <translation>使用模型设定</translation>
    </message>
    <message>
        <source>&apos;all&apos;, &apos;auto&apos; or a number of layers</source>
        <translation>“all”、“auto”或层数</translation>
    </message>
    <message>
        <source>Auto</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>On</source>
        <translation>开</translation>
    </message>
    <message>
        <source>Off</source>
        <translation>关</translation>
    </message>
    <message>
        <source>Requests the model answers at the same time (the chat, other apps, reading ahead); each gets the whole context size, and the KV cache holds all of them. Automatic: as many as fit, at most 4</source>
        <translation>模型同时回答的请求数（聊天、其他应用和预读共用）；每个请求都有完整的上下文长度，KV 缓存容纳全部请求。自动：内存装得下多少就用多少，最多 4 个</translation>
    </message>
    <message>
        <source>Memory-map the model file</source>
        <translation>以内存映射方式加载模型文件</translation>
    </message>
    <message>
        <source>8,192 (default)</source>
        <translation>8,192（默认）</translation>
    </message>
    <message>
        <source>Longest reply in tokens, thinking included; a conversation&apos;s own &quot;Max tokens&quot; wins</source>
        <translation>回复的最大 token 数（含思考）；对话自己的“最大 token 数”优先</translation>
    </message>
    <message>
        <source>Read thinking and tool calls (chat-format parsing)</source>
        <translation>读取思考和工具调用（聊天格式解析）</translation>
    </message>
    <message>
        <source>Off: the engine leaves the model&apos;s text as written (for a model whose output keeps failing its chat format); no tool calls then</source>
        <translation>关闭：引擎按原样保留模型的文本（适用于输出总是不符合其聊天格式的模型）；此时不能调用工具</translation>
    </message>
    <message>
        <source>Model default</source>
        <translation>模型默认</translation>
    </message>
    <message>
        <source>no limit</source>
        <translation>不限制</translation>
    </message>
    <message>
        <source>Most thinking tokens per reply; the engine then ends the thinking</source>
        <translation>每次回复最多的思考 token 数；达到后引擎会结束思考</translation>
    </message>
    <message>
        <source>Choose…</source>
        <translation>选择…</translation>
    </message>
    <message>
        <source>A smaller model with the same vocabulary drafts tokens the model then checks (speculative decoding)</source>
        <translation>由词表相同的小模型先起草 token，再由主模型校验（推测解码）</translation>
    </message>
    <message>
        <source>None</source>
        <translation>不使用</translation>
    </message>
    <message>
        <source>Saved for this model; used at the next load (the engine reloads).</source>
        <translation>已为此模型保存；下次加载时生效（引擎会重新加载）。</translation>
    </message>
    <message>
        <source>Use defaults</source>
        <translation>恢复默认</translation>
    </message>
    <message>
        <source>Forget this model&apos;s options: it follows Settings again</source>
        <translation>清除此模型的选项：重新使用“设置”中的值</translation>
    </message>
    <message>
        <source>The GPU models run on (also on the GPU page); the engine reloads</source>
        <translation>模型运行所用的 GPU（与 GPU 页面相同）；引擎会重新加载</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Context size</source>
        <translation>上下文长度</translation>
    </message>
    <message>
        <source>GPU layers</source>
        <translation>GPU 层数</translation>
    </message>
    <message>
        <source>Flash attention</source>
        <translation>Flash Attention</translation>
    </message>
    <message>
        <source>K</source>
        <translation>键 K</translation>
    </message>
    <message>
        <source>V</source>
        <translation>值 V</translation>
    </message>
    <message>
        <source>KV cache</source>
        <translation>KV 缓存</translation>
    </message>
    <message>
        <source>Batch</source>
        <translation>批大小</translation>
    </message>
    <message>
        <source>Micro-batch</source>
        <translation>微批大小</translation>
    </message>
    <message>
        <source>Threads</source>
        <translation>线程数</translation>
    </message>
    <message>
        <source>Draft model</source>
        <translation>草稿模型</translation>
    </message>
    <message>
        <source>Draft tokens</source>
        <translation>草稿 token 数</translation>
    </message>
    <message>
        <source>Reply limit</source>
        <translation>回复上限</translation>
    </message>
    <message>
        <source>Thinking</source>
        <translation>思考</translation>
    </message>
    <message>
        <source>Thinking effort</source>
        <translation>思考强度</translation>
    </message>
    <message>
        <source>Thinking budget</source>
        <translation>思考预算</translation>
    </message>
    <message>
        <source>Fit</source>
        <translation>适配</translation>
    </message>
    <message>
        <source>Automatic</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>Parallel requests</source>
        <translation>并行请求数</translation>
    </message>
    <message>
        <source> (integrated)</source>
        <translation>（集成显卡）</translation>
    </message>
    <message>
        <source>All of them (split the model)</source>
        <translation>全部（拆分模型）</translation>
    </message>
    <message>
        <source>GPU: none to choose, the engine {0}</source>
        <translation>GPU：无可选，该引擎{0}</translation>
    </message>
    <message>
        <source>Choose a model to see whether it fits.</source>
        <translation>选择一个模型以查看能否装下。</translation>
    </message>
    <message>
        <source>Reading the model…</source>
        <translation>正在读取模型…</translation>
    </message>
    <message>
        <source>Read the model</source>
        <translation>读取模型</translation>
    </message>
    <message>
        <source>Read the chat template</source>
        <translation>读取聊天模板</translation>
    </message>
    <message>
        <source>Cannot judge the fit: {0}</source>
        <translation>无法判断适配情况：{0}</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>Choose a draft model</source>
        <translation>选择草稿模型</translation>
    </message>
    <message>
        <source>GGUF models (*.gguf)</source>
        <translation>GGUF 模型 (*.gguf)</translation>
    </message>
    <message>
        <source>Checking {0}…</source>
        <translation>正在检查 {0}…</translation>
    </message>
    <message>
        <source>Check draft model</source>
        <translation>检查草稿模型</translation>
    </message>
    <message>
        <source>{0} · KV cache {1} · total {2} of {3}</source>
        <translation>{0} · KV 缓存 {1} · 共需 {2}，可用 {3}</translation>
    </message>
    <message>
        <source>{0} parallel requests × {1} tokens each</source>
        <translation>{0} 个并行请求 × 每个 {1} 个 token</translation>
    </message>
    <message>
        <source>1 request at a time, {0} tokens</source>
        <translation>一次 1 个请求，{0} 个 token</translation>
    </message>
    <message>
        <source>{0} (automatic)</source>
        <translation>{0}（自动）</translation>
    </message>
    <message>
        <source>Fits fully on the GPU</source>
        <translation>可完全放入 GPU</translation>
    </message>
    <message>
        <source>Partly on the GPU ({0} of {1} layers)</source>
        <translation>部分放入 GPU（{1} 层中的 {0} 层）</translation>
    </message>
    <message>
        <source>Fits in system RAM — runs on the CPU</source>
        <translation>可放入系统内存 — 在 CPU 上运行</translation>
    </message>
    <message>
        <source>Too large for this computer</source>
        <translation>对这台电脑来说太大</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message numerus="yes">
        <source>%n task(s) running</source>
        <translation>
            <numerusform>%n 个任务正在运行</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>MemoryBar</name>
    <message>
        <source>%s of %s used</source>
        <translation>已用 %s / 共 %s</translation>
    </message>
    <message>
        <source>size n/a</source>
        <translation>大小未知</translation>
    </message>
</context>
<context>
    <name>MessageWidget</name>
    <message>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <source>Tool</source>
        <translation>工具</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>Edit</source>
        <translation>编辑</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <source>Previous answer</source>
        <translation>上一个回答</translation>
    </message>
    <message>
        <source>Next answer</source>
        <translation>下一个回答</translation>
    </message>
    <message>
        <source>Answer %1 of %2: Regenerate keeps the earlier ones</source>
        <translation>第 %1 个回答，共 %2 个：重新生成会保留之前的回答</translation>
    </message>
    <message>
        <source>Writing a call to {0}… {1:,} tokens</source>
        <translation>正在编写对 {0} 的调用… {1:,} 个 token</translation>
    </message>
    <message>
        <source>Generating… {0:,} tokens</source>
        <translation>正在生成… {0:,} 个 token</translation>
    </message>
    <message>
        <source>The engine has generated {0:,} tokens, but nothing has arrived for {1}. The model may be writing something its chat format holds back (a tool call, a structured reply) or thinking the server does not stream. Stop keeps what arrived.</source>
        <translation>引擎已生成 {0:,} 个 token，但已有 {1} 没有收到任何内容。模型可能正在写聊天格式会暂存的内容（工具调用、结构化回复），或者在进行服务器不流式传输的思考。点击“停止”会保留已收到的内容。</translation>
    </message>
    <message>
        <source>Retry without format parsing</source>
        <translation>不解析格式重试</translation>
    </message>
    <message>
        <source>Reload this model&apos;s engine without chat-format parsing and answer this question again, once: the model&apos;s text then arrives as written (thinking and tool calls as plain text). The next reply parses again; to turn parsing off for this model for good, clear “Read thinking and tool calls” in Load options.</source>
        <translation>不使用对话格式解析重新加载此模型的引擎，并仅此一次重新回答这个问题：模型的文本将按原样到达（思考和工具调用为纯文本）。下一条回复会再次解析；若要为此模型永久关闭解析，请在“加载选项”中取消勾选“读取思考和工具调用”。</translation>
    </message>
    <message>
        <source>Interrupted: the engine stopped before the reply finished.</source>
        <translation>已中断：回复完成前引擎停止了。</translation>
    </message>
    <message>
        <source>Stopped.</source>
        <translation>已停止。</translation>
    </message>
    <message>
        <source>No reply: the engine failed.</source>
        <translation>没有回复：引擎出错。</translation>
    </message>
    <message>
        <source>The reply stopped here.</source>
        <translation>回复在此中止。</translation>
    </message>
    <message>
        <source>The model&apos;s output did not match its chat format, so the engine could not read it as thinking, answer or tool calls. Everything that arrived is kept above.</source>
        <translation>模型的输出不符合其聊天格式，因此引擎无法将其识别为思考、回答或工具调用。已收到的全部内容都保留在上方。</translation>
    </message>
    <message>
        <source>✓ Valid JSON that follows the schema.</source>
        <translation>✓ 有效的 JSON，且符合 schema。</translation>
    </message>
    <message>
        <source>✓ Valid JSON.</source>
        <translation>✓ 有效的 JSON。</translation>
    </message>
    <message>
        <source>The reply does not match the schema:</source>
        <translation>回复不符合 schema：</translation>
    </message>
    <message>
        <source>The reply is not valid JSON:</source>
        <translation>回复不是有效的 JSON：</translation>
    </message>
</context>
<context>
    <name>ModelsPage</name>
    <message>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Find chat and image models on the Hugging Face hub, see which file fits your GPU, and manage the models on this computer.</source>
        <translation>在 Hugging Face Hub 上查找聊天和图像模型，查看哪个文件适合你的 GPU，并管理本机上的模型。</translation>
    </message>
    <message>
        <source>Browse the hub</source>
        <translation>浏览 Hub</translation>
    </message>
    <message>
        <source>Downloads</source>
        <translation>下载</translation>
    </message>
    <message>
        <source>Library</source>
        <translation>模型库</translation>
    </message>
    <message>
        <source>Search GGUF models (e.g. qwen 7b instruct)</source>
        <translation>搜索 GGUF 模型（例如 qwen 7b instruct）</translation>
    </message>
    <message>
        <source>Most downloaded</source>
        <translation>下载最多</translation>
    </message>
    <message>
        <source>Most liked</source>
        <translation>最受喜爱</translation>
    </message>
    <message>
        <source>Trending</source>
        <translation>热门趋势</translation>
    </message>
    <message>
        <source>Recently updated</source>
        <translation>最近更新</translation>
    </message>
    <message>
        <source>Text models</source>
        <translation>文本模型</translation>
    </message>
    <message>
        <source>Image models</source>
        <translation>图像模型</translation>
    </message>
    <message>
        <source>Type a model name above, or browse the most downloaded GGUF models.</source>
        <translation>在上方输入模型名称，或浏览下载最多的 GGUF 模型。</translation>
    </message>
    <message>
        <source>Quant</source>
        <translation>量化</translation>
    </message>
    <message>
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <source>Fit</source>
        <translation>适配</translation>
    </message>
    <message>
        <source>Max context</source>
        <translation>最大上下文</translation>
    </message>
    <message>
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <source>Download selected quant</source>
        <translation>下载所选量化</translation>
    </message>
    <message>
        <source>Pick a model on the left to see its files and whether they fit your GPU.</source>
        <translation>在左侧选择一个模型，查看它的文件以及是否适合你的 GPU。</translation>
    </message>
    <message>
        <source>Model card</source>
        <translation>模型卡片</translation>
    </message>
    <message>
        <source>Offline mode is on: the hub is not contacted. Your library still works; turn offline mode off in Settings to search and download.</source>
        <translation>离线模式已开启：不会连接 Hub。模型库仍可使用；如需搜索和下载，请在“设置”中关闭离线模式。</translation>
    </message>
    <message>
        <source>Search image models (e.g. flux, stable diffusion)</source>
        <translation>搜索图像模型（例如 flux、stable diffusion）</translation>
    </message>
    <message>
        <source>Searching…</source>
        <translation>正在搜索…</translation>
    </message>
    <message>
        <source>Loading more…</source>
        <translation>正在加载更多…</translation>
    </message>
    <message>
        <source>No image models match “%1”. Try fewer or other words.</source>
        <translation>没有与“%1”匹配的图像模型。请减少关键词或换用其他词。</translation>
    </message>
    <message>
        <source>No GGUF models match “%1”. Try fewer or other words.</source>
        <translation>没有与“%1”匹配的 GGUF 模型。请减少关键词或换个说法。</translation>
    </message>
    <message>
        <source> · scroll for more</source>
        <translation> · 滚动查看更多</translation>
    </message>
    <message>
        <source>Loading files and reading the model header…</source>
        <translation>正在加载文件并读取模型头…</translation>
    </message>
    <message numerus="yes">
        <source>%n model(s)</source>
        <translation>
            <numerusform>%n 个模型</numerusform>
        </translation>
    </message>
    <message>
        <source>Speech models</source>
        <translation>语音模型</translation>
    </message>
    <message>
        <source>Search speech models (e.g. whisper.cpp, large-v3)</source>
        <translation>搜索语音模型（例如 whisper.cpp、large-v3）</translation>
    </message>
    <message>
        <source>No speech models match “%1”. Try fewer or other words.</source>
        <translation>没有与“%1”匹配的语音模型。请减少或更换关键词。</translation>
    </message>
    <message>
        <source>No results: no model to show.</source>
        <translation>没有结果：没有可显示的模型。</translation>
    </message>
    <message numerus="yes">
        <source>%n download(s)</source>
        <translation>
            <numerusform>%n 次下载</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n like(s)</source>
        <translation>
            <numerusform>%n 个赞</numerusform>
        </translation>
    </message>
    <message>
        <source>architecture %1</source>
        <translation>架构 %1</translation>
    </message>
    <message>
        <source>trained context %1</source>
        <translation>训练上下文 %1</translation>
    </message>
    <message>
        <source>gated: needs an access token</source>
        <translation>受限：需要访问令牌</translation>
    </message>
    <message>
        <source>vision: sees images in chat (its projector downloads with the model)</source>
        <translation>视觉：可在聊天中识别图片（投影器随模型一起下载）</translation>
    </message>
    <message>
        <source>Fit for %1 (%2 usable) at context %3.</source>
        <translation>针对 %1（可用 %2）、上下文 %3 的适配情况。</translation>
    </message>
    <message>
        <source>  (recommended)</source>
        <translation>（推荐）</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <source>BF16: fast on this GPU</source>
        <translation>BF16：在此 GPU 上速度快</translation>
    </message>
    <message>
        <source>BF16: slow on this GPU</source>
        <translation>BF16：在此 GPU 上速度慢</translation>
    </message>
    <message>
        <source>BF16: not supported by this GPU</source>
        <translation>BF16：此 GPU 不支持</translation>
    </message>
    <message>
        <source>This repository has no GGUF files to download.</source>
        <translation>此仓库没有可下载的 GGUF 文件。</translation>
    </message>
    <message>
        <source>*This repository has no model card.*</source>
        <translation>*此仓库没有模型卡片。*</translation>
    </message>
    <message>
        <source>image model: %1</source>
        <translation>图像模型：%1</translation>
    </message>
    <message>
        <source>speech model: %1</source>
        <translation>语音模型：%1</translation>
    </message>
    <message>
        <source>Fit for %1 (%2 usable): each file and whisper.cpp&apos;s working memory.</source>
        <translation>%1 的适配情况（可用 %2）：每个文件加上 whisper.cpp 的工作内存。</translation>
    </message>
    <message>
        <source>Fit for %1 (%2 usable) making %3×%4 images, with the parts each file needs.</source>
        <translation>按 %1（可用 %2）生成 %3×%4 图像评估，已计入每个文件所需的组件。</translation>
    </message>
    <message>
        <source>This repository has no single-file image model (.gguf or .safetensors) to download.</source>
        <translation>此仓库没有可下载的单文件图像模型（.gguf 或 .safetensors）。</translation>
    </message>
    <message>
        <source>Variant</source>
        <translation>版本</translation>
    </message>
    <message>
        <source>Size with parts</source>
        <translation>含组件大小</translation>
    </message>
    <message>
        <source>Downloads with it</source>
        <translation>一并下载</translation>
    </message>
    <message>
        <source>Download model and parts</source>
        <translation>下载模型及组件</translation>
    </message>
    <message>
        <source>missing: %1</source>
        <translation>缺少：%1</translation>
    </message>
    <message>
        <source>everything is in this file</source>
        <translation>全部包含在此文件中</translation>
    </message>
    <message>
        <source>Strata is offline: downloads need the network.</source>
        <translation>Strata 处于离线状态：下载需要网络。</translation>
    </message>
    <message>
        <source>Pick a file in the table first.</source>
        <translation>请先在表格中选择一个文件。</translation>
    </message>
    <message>
        <source>%1 needs parts this repository does not have:</source>
        <translation>%1 需要此仓库中没有的组件：</translation>
    </message>
    <message numerus="yes">
        <source>Downloads %n file(s), %2 in total: %3</source>
        <translation>
            <numerusform>下载 %n 个文件，共 %2：%3</numerusform>
        </translation>
    </message>
    <message>
        <source>No downloads. Pick a quant in “Browse the hub” and press Download.</source>
        <translation>没有下载任务。在“浏览 Hub”中选择一个量化，然后点击下载。</translation>
    </message>
    <message>
        <source>This model is gated or private. Accept its terms on the hub, then paste an access token (saved in the hub&apos;s own token store).</source>
        <translation>此模型受限或为私有。请先在 Hub 上接受其条款，再粘贴访问令牌（保存在 Hub 自己的令牌存储中）。</translation>
    </message>
    <message>
        <source>hf_…</source>
        <translation>hf_…</translation>
    </message>
    <message>
        <source>Save token and retry</source>
        <translation>保存令牌并重试</translation>
    </message>
    <message>
        <source>Open GGUF…</source>
        <translation>打开 GGUF…</translation>
    </message>
    <message>
        <source>Refresh</source>
        <translation>刷新</translation>
    </message>
    <message>
        <source>Show in folder</source>
        <translation>在文件夹中显示</translation>
    </message>
    <message>
        <source>Delete…</source>
        <translation>删除…</translation>
    </message>
    <message>
        <source>Chat with this model</source>
        <translation>与此模型聊天</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Architecture</source>
        <translation>架构</translation>
    </message>
    <message>
        <source>Parameters</source>
        <translation>参数量</translation>
    </message>
    <message>
        <source>Context</source>
        <translation>上下文</translation>
    </message>
    <message>
        <source>Chat template</source>
        <translation>聊天模板</translation>
    </message>
    <message>
        <source>Where / status</source>
        <translation>位置 / 状态</translation>
    </message>
    <message>
        <source>No models yet. Download one from “Browse the hub”, press “Open GGUF…”, or drop .gguf files here.</source>
        <translation>还没有模型。可从“浏览 Hub”下载，点击“打开 GGUF…”，或把 .gguf 文件拖到这里。</translation>
    </message>
    <message>
        <source>Make images with this model</source>
        <translation>用此模型生成图像</translation>
    </message>
    <message>
        <source>Scanning…</source>
        <translation>正在扫描…</translation>
    </message>
    <message>
        <source>Broken: %1</source>
        <translation>已损坏：%1</translation>
    </message>
    <message>
        <source>image model</source>
        <translation>图像模型</translation>
    </message>
    <message>
        <source>embedding model</source>
        <translation>嵌入模型</translation>
    </message>
    <message>
        <source>speech model</source>
        <translation>语音模型</translation>
    </message>
    <message>
        <source>reranker</source>
        <translation>重排序模型</translation>
    </message>
    <message>
        <source>yes</source>
        <translation>是</translation>
    </message>
    <message>
        <source>no</source>
        <translation>否</translation>
    </message>
    <message numerus="yes">
        <source>%n model(s) · %2 on disk</source>
        <translation>
            <numerusform>%n 个模型 · 占用磁盘 %2</numerusform>
        </translation>
    </message>
    <message>
        <source> · %1 broken</source>
        <translation> · %1 个已损坏</translation>
    </message>
    <message>
        <source>Open model</source>
        <translation>打开模型</translation>
    </message>
    <message>
        <source>Models (*.gguf *.safetensors)</source>
        <translation>模型 (*.gguf *.safetensors)</translation>
    </message>
    <message>
        <source>Delete model</source>
        <translation>删除模型</translation>
    </message>
    <message>
        <source>Delete %1? This frees %2 on disk.</source>
        <translation>删除 %1？这将释放 %2 磁盘空间。</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>Deleted %1, freed %2.</source>
        <translation>已删除 %1，释放了 %2。</translation>
    </message>
</context>
<context>
    <name>NetworkPage</name>
    <message>
        <source>Network</source>
        <translation>网络</translation>
    </message>
    <message>
        <source>Chat with models served by other machines, serve your models to other apps, and pool GPUs of several computers.</source>
        <translation>使用其他机器提供的模型聊天，把你的模型提供给其他应用，并汇集多台计算机的 GPU。</translation>
    </message>
    <message>
        <source>Remote engines</source>
        <translation>远程引擎</translation>
    </message>
    <message>
        <source>OpenAI-compatible servers on other machines (vLLM, SGLang, llama-server, another Strata). Choose one in the Chat page&apos;s engine list. API keys are stored in a file only you can read, never in the settings file or the log.</source>
        <translation>其他机器上与 OpenAI 兼容的服务器（vLLM、SGLang、llama-server 或另一个 Strata）。可在“聊天”页面的引擎列表中选择。API 密钥保存在只有你能读取的文件中，绝不会写入设置文件或日志。</translation>
    </message>
    <message>
        <source>No remote engines yet. Add a server&apos;s address below.</source>
        <translation>还没有远程引擎。请在下方添加服务器地址。</translation>
    </message>
    <message>
        <source>Model:</source>
        <translation>模型：</translation>
    </message>
    <message>
        <source>Refresh models</source>
        <translation>刷新模型</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>e.g. Lab server</source>
        <translation>例如：实验室服务器</translation>
    </message>
    <message>
        <source>optional</source>
        <translation>可选</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Address</source>
        <translation>地址</translation>
    </message>
    <message>
        <source>API key</source>
        <translation>API 密钥</translation>
    </message>
    <message>
        <source>Add and check</source>
        <translation>添加并检查</translation>
    </message>
    <message>
        <source>key</source>
        <translation>有密钥</translation>
    </message>
    <message>
        <source>no key</source>
        <translation>无密钥</translation>
    </message>
    <message>
        <source>Enter a name and the server&apos;s address.</source>
        <translation>请输入名称和服务器地址。</translation>
    </message>
    <message>
        <source>Checking {0}…</source>
        <translation>正在检查 {0}…</translation>
    </message>
    <message>
        <source>Check remote engine</source>
        <translation>检查远程引擎</translation>
    </message>
    <message>
        <source>List remote models</source>
        <translation>列出远程模型</translation>
    </message>
    <message>
        <source>Serve to other apps</source>
        <translation>为其他应用提供服务</translation>
    </message>
    <message>
        <source>Other programs (editors, Open WebUI, agents, scripts) can use every model of your library through OpenAI, Ollama and Anthropic addresses: a model loads when a program asks for it, shares the engine the chat uses, and unloads when idle. Their requests appear in the Dashboard.</source>
        <translation>其他程序（编辑器、Open WebUI、智能体、脚本）可以通过 OpenAI、Ollama 和 Anthropic 地址使用模型库中的每个模型：程序请求时加载模型，与聊天共用同一个引擎，闲置时卸载。它们的请求会显示在仪表盘中。</translation>
    </message>
    <message>
        <source>Port</source>
        <translation>端口</translation>
    </message>
    <message>
        <source>Allow other computers on the network (requires an API key)</source>
        <translation>允许网络中的其他电脑连接（需要 API 密钥）</translation>
    </message>
    <message>
        <source>Start serving</source>
        <translation>开始提供服务</translation>
    </message>
    <message>
        <source>Generate new key</source>
        <translation>生成新密钥</translation>
    </message>
    <message>
        <source>Copy this key now: it is shown only once.</source>
        <translation>请立即复制此密钥：它只显示一次。</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>Waiting requests</source>
        <translation>等待中的请求</translation>
    </message>
    <message>
        <source>From</source>
        <translation>来自</translation>
    </message>
    <message>
        <source>Why</source>
        <translation>原因</translation>
    </message>
    <message>
        <source>Waited</source>
        <translation>已等待</translation>
    </message>
    <message numerus="yes">
        <source>%1 of %n slot(s)</source>
        <translation>
            <numerusform>%1 / %n 个槽位</numerusform>
        </translation>
    </message>
    <message>
        <source>Its model is loading</source>
        <translation>模型正在加载</translation>
    </message>
    <message>
        <source>every model</source>
        <translation>所有模型</translation>
    </message>
    <message>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <source>Images</source>
        <translation>图像</translation>
    </message>
    <message>
        <source>Other apps (API)</source>
        <translation>其他应用（API）</translation>
    </message>
    <message>
        <source>Benchmark</source>
        <translation>基准测试</translation>
    </message>
    <message>
        <source>Engine update trial</source>
        <translation>引擎更新试运行</translation>
    </message>
    <message>
        <source>Requests: {0} total · {1} active · {2} waiting · {3} completed · {4} failed · {5} refused (wrong key)</source>
        <translation>请求：共 {0} · 进行中 {1} · 等待中 {2} · 已完成 {3} · 失败 {4} · 已拒绝 {5}（密钥错误）</translation>
    </message>
    <message>
        <source>Try it from a terminal:</source>
        <translation>在终端中试一试：</translation>
    </message>
    <message numerus="yes">
        <source>Added {0}: %n model(s).</source>
        <translation>
            <numerusform>已添加 {0}：%n 个模型。</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>{0} serves %n model(s).</source>
        <translation>
            <numerusform>{0} 提供 %n 个模型。</numerusform>
        </translation>
    </message>
    <message>
        <source>Loaded models</source>
        <translation>已加载的模型</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>Memory</source>
        <translation>内存</translation>
    </message>
    <message>
        <source>In use</source>
        <translation>使用中</translation>
    </message>
    <message>
        <source>Idle</source>
        <translation>闲置</translation>
    </message>
    <message>
        <source>Unloads in</source>
        <translation>卸载倒计时</translation>
    </message>
    <message>
        <source>Waiting</source>
        <translation>等待中</translation>
    </message>
    <message>
        <source>Requests being answered, of the requests the model answers at once (Settings: Parallel requests per model)</source>
        <translation>正在回答的请求数 / 模型可同时回答的请求数（设置：每个模型的并行请求数）</translation>
    </message>
    <message>
        <source>Requests waiting for this model</source>
        <translation>等待此模型的请求数</translation>
    </message>
    <message>
        <source>No model is loaded. Programs load one by naming it.</source>
        <translation>没有加载任何模型。程序指定模型名称时即会加载。</translation>
    </message>
    <message>
        <source>Unload</source>
        <translation>卸载</translation>
    </message>
    <message>
        <source>Free the model&apos;s memory (after the requests using it end).</source>
        <translation>释放该模型占用的内存（在正在使用它的请求结束之后）。</translation>
    </message>
    <message>
        <source>Unload {0}</source>
        <translation>卸载 {0}</translation>
    </message>
    <message>
        <source>every network interface</source>
        <translation>所有网络接口</translation>
    </message>
    <message>
        <source>this computer only</source>
        <translation>仅限本机</translation>
    </message>
    <message>
        <source>● Serving at {0} ({1}).</source>
        <translation>● 正在 {0} 提供服务（{1}）。</translation>
    </message>
    <message>
        <source>Strata took over the model server that ran in the background (one copy of each model for the chat and other apps); it goes back to the background when you close Strata.</source>
        <translation>Strata 已接管在后台运行的模型服务器（聊天和其他应用共用每个模型的同一份副本）；关闭 Strata 后它会回到后台运行。</translation>
    </message>
    <message>
        <source>Not serving. Start it to give other apps an address.</source>
        <translation>未提供服务。启动后即可为其他应用提供一个地址。</translation>
    </message>
    <message>
        <source>Stop serving</source>
        <translation>停止服务</translation>
    </message>
    <message>
        <source>An API key is set: clients must send it.</source>
        <translation>已设置 API 密钥：客户端必须携带它。</translation>
    </message>
    <message>
        <source>No API key: only programs on this computer can connect.</source>
        <translation>未设置 API 密钥：只有本机程序可以连接。</translation>
    </message>
    <message>
        <source>RPC workers / lend this GPU</source>
        <translation>RPC 工作节点 / 出借本机 GPU</translation>
    </message>
    <message>
        <source>llama.cpp can spread a model&apos;s layers over the GPUs of several computers. On a computer that lends its GPU, start the RPC server; on the one that runs the model, add its address as a worker.</source>
        <translation>llama.cpp 可以把模型的各层分布到多台电脑的 GPU 上。在出借 GPU 的电脑上启动 RPC 服务器；在运行模型的电脑上把它的地址添加为工作节点。</translation>
    </message>
    <message>
        <source>rpc-server has no password and no encryption: anyone who can reach this port can use this computer&apos;s GPU and memory. Only expose it on a network you trust.</source>
        <translation>rpc-server 没有密码，也不加密：任何能访问此端口的人都能使用本机的 GPU 和内存。请只在你信任的网络中开放它。</translation>
    </message>
    <message>
        <source>Listen on</source>
        <translation>监听地址</translation>
    </message>
    <message>
        <source>127.0.0.1: this computer only. 0.0.0.0 or a LAN address: other computers can connect.</source>
        <translation>127.0.0.1：仅限本机。0.0.0.0 或局域网地址：其他电脑也可以连接。</translation>
    </message>
    <message>
        <source>devices, e.g. Vulkan0 (default: all)</source>
        <translation>设备，例如 Vulkan0（默认：全部）</translation>
    </message>
    <message>
        <source>Lend this GPU</source>
        <translation>出借本机 GPU</translation>
    </message>
    <message>
        <source>Workers this computer uses</source>
        <translation>本机使用的工作节点</translation>
    </message>
    <message>
        <source>Spread models over these workers (takes effect when the model loads next)</source>
        <translation>把模型分布到这些工作节点上（下次加载模型时生效）</translation>
    </message>
    <message>
        <source>No workers yet. Add the address an RPC server shows, e.g. 192.168.1.30:50052.</source>
        <translation>还没有工作节点。请添加 RPC 服务器显示的地址，例如 192.168.1.30:50052。</translation>
    </message>
    <message>
        <source>Check all</source>
        <translation>全部检查</translation>
    </message>
    <message>
        <source>● Lending this computer at {0}. Add this address as a worker on the other computer.</source>
        <translation>● 正在 {0} 出借本机。请在另一台电脑上把此地址添加为工作节点。</translation>
    </message>
    <message>
        <source>Stop lending</source>
        <translation>停止出借</translation>
    </message>
    <message>
        <source>Not lending this computer.</source>
        <translation>未出借本机。</translation>
    </message>
    <message>
        <source>Workers add {0:,} MiB of free memory for models.</source>
        <translation>工作节点为模型额外提供 {0:,} MiB 可用内存。</translation>
    </message>
    <message>
        <source>{0} — not checked yet</source>
        <translation>{0}——尚未检查</translation>
    </message>
    <message>
        <source>{0} — unreachable: {1}</source>
        <translation>{0}——无法连接：{1}</translation>
    </message>
    <message>
        <source>{0} {1:,} MiB free</source>
        <translation>{0} 可用 {1:,} MiB</translation>
    </message>
    <message>
        <source>{0} — reachable: {1}</source>
        <translation>{0}——可以连接：{1}</translation>
    </message>
    <message>
        <source>{0} — reachable ({1})</source>
        <translation>{0}——可以连接（{1}）</translation>
    </message>
    <message>
        <source> — left out after it stopped answering</source>
        <translation>——因停止响应已被排除</translation>
    </message>
    <message>
        <source>Check RPC worker</source>
        <translation>检查 RPC 工作节点</translation>
    </message>
    <message>
        <source>Check RPC workers</source>
        <translation>检查 RPC 工作节点</translation>
    </message>
    <message>
        <source>Checking…</source>
        <translation>正在检查…</translation>
    </message>
</context>
<context>
    <name>NoticeBanner</name>
    <message>
        <source>Details…</source>
        <translation>详情…</translation>
    </message>
    <message>
        <source>Dismiss</source>
        <translation>关闭</translation>
    </message>
</context>
<context>
    <name>PassageDialog</name>
    <message>
        <source>Previous page</source>
        <translation>上一页</translation>
    </message>
    <message>
        <source>Next page</source>
        <translation>下一页</translation>
    </message>
    <message>
        <source>This passage is no longer stored (its document was removed).</source>
        <translation>此段落已不再保存（其文档已被移除）。</translation>
    </message>
    <message>
        <source>Page %1 of %2</source>
        <translation>第 %1 页，共 %2 页</translation>
    </message>
</context>
<context>
    <name>PresetBar</name>
    <message>
        <source>System prompt, sampling, thinking and tools saved under a name</source>
        <translation>以名称保存的系统提示词、采样、思考和工具设置</translation>
    </message>
    <message>
        <source>Save as…</source>
        <translation>另存为…</translation>
    </message>
    <message>
        <source>Save these settings as a preset</source>
        <translation>将这些设置保存为预设</translation>
    </message>
    <message>
        <source>Import a preset file…</source>
        <translation>导入预设文件…</translation>
    </message>
    <message>
        <source>Export this preset…</source>
        <translation>导出此预设…</translation>
    </message>
    <message>
        <source>Delete this preset</source>
        <translation>删除此预设</translation>
    </message>
    <message>
        <source>No preset</source>
        <translation>无预设</translation>
    </message>
    <message>
        <source>Save as preset</source>
        <translation>保存为预设</translation>
    </message>
    <message>
        <source>Preset name:</source>
        <translation>预设名称：</translation>
    </message>
    <message>
        <source>Saved the preset “{0}”.</source>
        <translation>已保存预设“{0}”。</translation>
    </message>
    <message>
        <source>Presets (*.json)</source>
        <translation>预设 (*.json)</translation>
    </message>
    <message>
        <source>Export preset</source>
        <translation>导出预设</translation>
    </message>
    <message>
        <source>Exported to {0}</source>
        <translation>已导出到 {0}</translation>
    </message>
    <message>
        <source>Import preset</source>
        <translation>导入预设</translation>
    </message>
    <message>
        <source>Imported the preset “{0}”.</source>
        <translation>已导入预设“{0}”。</translation>
    </message>
</context>
<context>
    <name>ProgressPanel</name>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Starting…</source>
        <translation>正在开始…</translation>
    </message>
    <message>
        <source>Cancelling…</source>
        <translation>正在取消…</translation>
    </message>
</context>
<context>
    <name>QFileDialog</name>
    <message>
        <source>Files of &amp;type:</source>
        <extracomment>Languages the UI ships, as stored in ``Settings.language`` (besides &quot;system&quot;).</extracomment>
        <translation>文件类型(&amp;T)：</translation>
    </message>
    <message>
        <source>&amp;Look in:</source>
        <translation>查找范围(&amp;L)：</translation>
    </message>
</context>
<context>
    <name>ReplyParts</name>
    <message>
        <source>{0:.1f} s</source>
        <translation>{0:.1f} 秒</translation>
    </message>
    <message>
        <source>{0:.0f} s</source>
        <translation>{0:.0f} 秒</translation>
    </message>
    <message>
        <source>{0} min</source>
        <translation>{0} 分钟</translation>
    </message>
    <message>
        <source>{0} min {1} s</source>
        <translation>{0} 分 {1} 秒</translation>
    </message>
</context>
<context>
    <name>SearchHitWidget</name>
    <message>
        <source>✓ in your library</source>
        <translation>✓ 已在模型库中</translation>
    </message>
    <message>
        <source>Files of this repository are in your library</source>
        <translation>此仓库的文件已在你的模型库中</translation>
    </message>
    <message numerus="yes">
        <source>%1 download(s)</source>
        <translation>
            <numerusform>%1 次下载</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%1 like(s)</source>
        <translation>
            <numerusform>%1 个赞</numerusform>
        </translation>
    </message>
    <message>
        <source>%1 parameters</source>
        <translation>%1 参数</translation>
    </message>
    <message>
        <source>updated %1</source>
        <translation>更新于 %1</translation>
    </message>
    <message>
        <source>gated</source>
        <translation>受限</translation>
    </message>
</context>
<context>
    <name>SettingsPage</name>
    <message>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>Follow system</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>Light</source>
        <translation>浅色</translation>
    </message>
    <message>
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <source>The app&apos;s language</source>
        <translation>应用的语言</translation>
    </message>
    <message>
        <source>Detect it</source>
        <translation>自动检测</translation>
    </message>
    <message>
        <source>The language you speak to the microphone (speech to text)</source>
        <translation>你对麦克风说话所用的语言（语音转文字）</translation>
    </message>
    <message>
        <source>Spoken language</source>
        <translation>口述语言</translation>
    </message>
    <message>
        <source>(as given by the release)</source>
        <translation>（使用发行版本给出的地址）</translation>
    </message>
    <message>
        <source>Offline mode: never contact the hub or GitHub</source>
        <translation>离线模式：不连接 Hub 或 GitHub</translation>
    </message>
    <message>
        <source>Start the model server when I sign in (no window)</source>
        <translation>登录时启动模型服务器（不显示窗口）</translation>
    </message>
    <message>
        <source>Serves every model of your library to other apps (OpenAI, Ollama and Anthropic APIs) from sign-in on, loading each one when it is asked for. Turning it off removes the entry.</source>
        <translation>从登录起向其他应用提供模型库中的每个模型（OpenAI、Ollama 和 Anthropic API），在被请求时加载。关闭此项会删除启动项。</translation>
    </message>
    <message>
        <source> s</source>
        <translation> 秒</translation>
    </message>
    <message>
        <source>How long a request from another app may wait for its model (every parallel request in use, the model loading, or memory being freed). Past this it is answered &quot;busy&quot; (HTTP 503 with Retry-After), so the app can try again later.</source>
        <translation>其他应用的请求最多可以等待其模型多久（所有并行请求都在使用中、模型正在加载或正在腾出内存）。超过这个时间，请求会得到“忙碌”的回复（HTTP 503，附带 Retry-After），应用可以稍后再试。</translation>
    </message>
    <message>
        <source>Wait limit for API requests</source>
        <translation>API 请求的等待上限</translation>
    </message>
    <message>
        <source>Add folder…</source>
        <translation>添加文件夹…</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>detected automatically, e.g. gfx1100</source>
        <translation>自动检测，例如 gfx1100</translation>
    </message>
    <message>
        <source>no limit</source>
        <translation>不限制</translation>
    </message>
    <message>
        <source>use detected memory</source>
        <translation>使用检测到的内存</translation>
    </message>
    <message>
        <source>model default</source>
        <translation>模型默认值</translation>
    </message>
    <message>
        <source>auto</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>on</source>
        <translation>开</translation>
    </message>
    <message>
        <source>off</source>
        <translation>关</translation>
    </message>
    <message>
        <source>engine default</source>
        <translation>引擎默认值</translation>
    </message>
    <message>
        <source>Automatic</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>How many requests each loaded model answers at the same time: the chat, other apps and reading ahead share it. Each request gets the whole context size, so every one of them needs memory. Automatic: as many as fit in memory, at most 4.</source>
        <translation>每个已加载的模型同时回答多少个请求：聊天、其他应用和预读共用这些请求。每个请求都有完整的上下文长度，因此每个请求都要占用内存。自动：内存装得下多少就用多少，最多 4 个。</translation>
    </message>
    <message>
        <source>If an engine fails, continue on the next one (Vulkan, then CPU)</source>
        <translation>引擎出错时，改用下一个（先 Vulkan，再 CPU）</translation>
    </message>
    <message>
        <source>Load the last model when Strata starts</source>
        <translation>启动 Strata 时载入上次用的模型</translation>
    </message>
    <message>
        <source>Its engine starts while the window opens, so the first message does not wait for the model to load. It is unloaded when idle, as any model.</source>
        <translation>窗口打开的同时启动它的引擎，第一条消息不必等模型载入。闲置时会像其他模型一样卸载。</translation>
    </message>
    <message>
        <source>Read the open conversation ahead while you type</source>
        <translation>输入时预先读取当前对话</translation>
    </message>
    <message>
        <source>While the model is loaded and idle, its engine reads the conversation you have open (system prompt, tools, history), so the reply to your next message starts sooner. It uses the GPU or processor meanwhile.</source>
        <translation>模型已加载且空闲时，引擎会预先读取您打开的对话（系统提示词、工具、历史记录），这样下一条消息的回复会更快开始。读取期间会占用 GPU 或处理器。</translation>
    </message>
    <message>
        <source> min</source>
        <translation> 分钟</translation>
    </message>
    <message>
        <source>keep loaded</source>
        <translation>保持加载</translation>
    </message>
    <message>
        <source>An engine nobody used for this long is unloaded to free its memory; the next message loads the model again.</source>
        <translation>超过这段时间无人使用的引擎会被卸载以释放内存；下一条消息会重新加载模型。</translation>
    </message>
    <message>
        <source>GPU memory (or RAM)</source>
        <translation>GPU 显存（或内存）</translation>
    </message>
    <message>
        <source>What all loaded models may hold together. When a model does not fit beside the others, the least recently used one is unloaded first.</source>
        <translation>所有已加载模型合计可占用的内存。当一个模型放不下时，先卸载最久未使用的那个。</translation>
    </message>
    <message>
        <source>A new engine build is used only when its trial on this machine is not slower than the current build by more than this (prefill or decode).</source>
        <translation>只有在本机试用时比当前构建慢得不超过此比例（预填充或解码）的新引擎构建才会被使用。</translation>
    </message>
    <message>
        <source>Stable (the catalog&apos;s tested versions)</source>
        <translation>稳定版（目录中经过测试的版本）</translation>
    </message>
    <message>
        <source>Latest release</source>
        <translation>最新发布</translation>
    </message>
    <message>
        <source>Parallel requests per model</source>
        <translation>每个模型的并行请求数</translation>
    </message>
    <message>
        <source>Save</source>
        <translation>保存</translation>
    </message>
    <message>
        <source>Revert</source>
        <translation>还原</translation>
    </message>
    <message>
        <source>Restore defaults</source>
        <translation>恢复默认值</translation>
    </message>
    <message>
        <source>Theme</source>
        <translation>主题</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <source>Run the first-run guide again</source>
        <translation>重新运行首次使用向导</translation>
    </message>
    <message>
        <source>Getting started</source>
        <translation>入门</translation>
    </message>
    <message>
        <source>Hugging Face endpoint</source>
        <translation>Hugging Face 端点</translation>
    </message>
    <message>
        <source>GitHub API</source>
        <translation>GitHub API</translation>
    </message>
    <message>
        <source>GitHub downloads</source>
        <translation>GitHub 下载</translation>
    </message>
    <message>
        <source>Use a mirror when the hub or GitHub cannot be reached from your network.</source>
        <translation>如果你的网络无法访问 Hub 或 GitHub，请使用镜像。</translation>
    </message>
    <message>
        <source>Data (engines, chats)</source>
        <translation>数据（引擎、聊天记录）</translation>
    </message>
    <message>
        <source>Cache</source>
        <translation>缓存</translation>
    </message>
    <message>
        <source>Logs</source>
        <translation>日志</translation>
    </message>
    <message>
        <source>Open</source>
        <translation>打开</translation>
    </message>
    <message>
        <source>Model folders</source>
        <translation>模型文件夹</translation>
    </message>
    <message>
        <source>GPU target override</source>
        <translation>覆盖 GPU 目标</translation>
    </message>
    <message>
        <source>Memory budget for models</source>
        <translation>模型内存预算</translation>
    </message>
    <message>
        <source>GPU memory if not detected</source>
        <translation>未检测到时的 GPU 内存</translation>
    </message>
    <message>
        <source>Context size</source>
        <translation>上下文大小</translation>
    </message>
    <message>
        <source>GPU layers</source>
        <translation>GPU 层数</translation>
    </message>
    <message>
        <source>Flash attention</source>
        <translation>Flash Attention</translation>
    </message>
    <message>
        <source>CPU threads</source>
        <translation>CPU 线程数</translation>
    </message>
    <message>
        <source>Unload idle models after</source>
        <translation>闲置多久后卸载模型</translation>
    </message>
    <message>
        <source>Memory for loaded models</source>
        <translation>已加载模型的内存</translation>
    </message>
    <message>
        <source>Engine updates</source>
        <translation>引擎更新</translation>
    </message>
    <message>
        <source>Slower update allowed by</source>
        <translation>允许更新变慢的幅度</translation>
    </message>
    <message>
        <source>Appearance</source>
        <translation>外观</translation>
    </message>
    <message>
        <source>Network</source>
        <translation>网络</translation>
    </message>
    <message>
        <source>Folders</source>
        <translation>文件夹</translation>
    </message>
    <message>
        <source>Hardware</source>
        <translation>硬件</translation>
    </message>
    <message>
        <source>Engine defaults</source>
        <translation>引擎默认设置</translation>
    </message>
    <message>
        <source>Saved to %s</source>
        <translation>保存在 %s</translation>
    </message>
    <message>
        <source>Defaults shown; press Save to keep them.</source>
        <translation>已显示默认值；点击“保存”以应用。</translation>
    </message>
    <message>
        <source>Not saved: </source>
        <translation>未保存：</translation>
    </message>
    <message>
        <source>Saved. Network and folder changes apply after restarting Strata.</source>
        <translation>已保存。网络和文件夹的更改将在重启 Strata 后生效。</translation>
    </message>
    <message>
        <source>Saved. The new language applies after restarting Strata.</source>
        <translation>已保存。新语言将在重启 Strata 后生效。</translation>
    </message>
    <message>
        <source>Saved.</source>
        <translation>已保存。</translation>
    </message>
    <message>
        <source>The model server starts when you sign in.</source>
        <translation>模型服务器将在你登录时启动。</translation>
    </message>
    <message>
        <source>The model server no longer starts when you sign in.</source>
        <translation>模型服务器不再在你登录时启动。</translation>
    </message>
</context>
<context>
    <name>SourcesLabel</name>
    <message>
        <source>full text and vectors</source>
        <translation>全文和向量</translation>
    </message>
    <message>
        <source>full text</source>
        <translation>全文</translation>
    </message>
    <message>
        <source>The attached documents went whole with the question.</source>
        <translation>附加的文档已随问题完整发送。</translation>
    </message>
    <message numerus="yes">
        <source>The %n most relevant passages of the attached documents went with the question (%1).</source>
        <translation>
            <numerusform>已随问题发送附加文档中最相关的 %n 个段落（%1）。</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>Sparkline</name>
    <message>
        <source>n/a</source>
        <translation>无</translation>
    </message>
    <message>
        <source>no sensor</source>
        <translation>无传感器</translation>
    </message>
    <message>
        <source>waiting…</source>
        <translation>等待中…</translation>
    </message>
</context>
<context>
    <name>ThinkingBlock</name>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>Copy the thinking</source>
        <translation>复制思考内容</translation>
    </message>
    <message>
        <source>Thinking… {0:,} tokens</source>
        <translation>思考中… {0:,} 个 token</translation>
    </message>
    <message>
        <source>Thinking…</source>
        <translation>思考中…</translation>
    </message>
    <message>
        <source>Thought for {0}</source>
        <translation>思考了 {0}</translation>
    </message>
    <message>
        <source>Thinking</source>
        <translation>思考</translation>
    </message>
    <message>
        <source>{0:,} tokens</source>
        <translation>{0:,} 个 token</translation>
    </message>
</context>
<context>
    <name>ToolCallBox</name>
    <message>
        <source>Allow once</source>
        <translation>允许一次</translation>
    </message>
    <message>
        <source>Always allow this tool</source>
        <translation>始终允许此工具</translation>
    </message>
    <message>
        <source>Deny</source>
        <translation>拒绝</translation>
    </message>
    <message>
        <source>Tool call: {0}</source>
        <translation>工具调用：{0}</translation>
    </message>
    <message>
        <source>waiting for your answer</source>
        <translation>等待你的答复</translation>
    </message>
    <message>
        <source>running…</source>
        <translation>运行中…</translation>
    </message>
    <message>
        <source>done in {0}</source>
        <translation>用时 {0} 完成</translation>
    </message>
    <message>
        <source>denied</source>
        <translation>已拒绝</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>Run {0} of the tool server {1}?</source>
        <translation>运行工具服务器 {1} 的 {0}？</translation>
    </message>
</context>
<context>
    <name>ToolResultView</name>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>tool</source>
        <translation>工具</translation>
    </message>
    <message>
        <source>Result of {0}</source>
        <translation>{0} 的结果</translation>
    </message>
    <message>
        <source>{0} was not run: you denied it</source>
        <translation>{0} 未运行：你拒绝了它</translation>
    </message>
    <message>
        <source>{0} was stopped</source>
        <translation>{0} 已被停止</translation>
    </message>
    <message>
        <source>{0} failed: {1}</source>
        <translation>{0} 失败：{1}</translation>
    </message>
</context>
<context>
    <name>ToolsPanel</name>
    <message>
        <source>Tools</source>
        <translation>工具</translation>
    </message>
    <message>
        <source>Add…</source>
        <translation>添加…</translation>
    </message>
    <message>
        <source>Import JSON…</source>
        <translation>导入 JSON…</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Check</source>
        <translation>检查</translation>
    </message>
    <message>
        <source>Start the servers that are on and list their tools</source>
        <translation>启动已开启的服务器并列出它们的工具</translation>
    </message>
    <message>
        <source>Ticked servers&apos; tools are offered to models that can call tools. Every call asks you first: Allow once, Always allow this tool, or Deny.</source>
        <translation>勾选的服务器的工具会提供给能调用工具的模型。每次调用都会先征求你的同意：允许一次、始终允许此工具或拒绝。</translation>
    </message>
    <message>
        <source>command</source>
        <translation>命令</translation>
    </message>
    <message>
        <source>address</source>
        <translation>地址</translation>
    </message>
    <message>
        <source>No tool servers yet: add a command or an address, or import the mcpServers JSON of another app.</source>
        <translation>还没有工具服务器：添加一个命令或地址，或导入其他应用的 mcpServers JSON。</translation>
    </message>
    <message>
        <source>Imported: {0}</source>
        <translation>已导入：{0}</translation>
    </message>
    <message>
        <source>Starting the tool servers…</source>
        <translation>正在启动工具服务器…</translation>
    </message>
    <message>
        <source>Check tool servers</source>
        <translation>检查工具服务器</translation>
    </message>
    <message>
        <source>{0}: {1}</source>
        <translation>{0}：{1}</translation>
    </message>
    <message>
        <source>No server is on.</source>
        <translation>没有开启的服务器。</translation>
    </message>
</context>
<context>
    <name>UiHooks</name>
    <message>
        <source>Choose a folder</source>
        <translation>选择文件夹</translation>
    </message>
    <message>
        <source>Choose a model</source>
        <translation>选择模型</translation>
    </message>
    <message>
        <source>GGUF models (*.gguf)</source>
        <translation>GGUF 模型 (*.gguf)</translation>
    </message>
    <message>
        <source>Choose an image model</source>
        <translation>选择图像模型</translation>
    </message>
    <message>
        <source>Image models (*.gguf *.safetensors *.ckpt)</source>
        <translation>图像模型 (*.gguf *.safetensors *.ckpt)</translation>
    </message>
    <message>
        <source>Export</source>
        <translation>导出</translation>
    </message>
</context>
<context>
    <name>Voice</name>
    <message>
        <source>On Windows: Settings → Privacy &amp; security → Microphone, then allow desktop apps to use it.</source>
        <translation>在 Windows 上：设置 → 隐私和安全性 → 麦克风，然后允许桌面应用使用它。</translation>
    </message>
    <message>
        <source>The system denied Strata the microphone.</source>
        <translation>系统拒绝了 Strata 使用麦克风。</translation>
    </message>
    <message>
        <source>No microphone was found.</source>
        <translation>没有找到麦克风。</translation>
    </message>
    <message>
        <source>The microphone could not be opened.</source>
        <translation>无法打开麦克风。</translation>
    </message>
    <message>
        <source>{0} could not be decoded: {1}</source>
        <translation>无法解码 {0}：{1}</translation>
    </message>
    <message>
        <source>Convert it to WAV, MP3 or FLAC.</source>
        <translation>请转换为 WAV、MP3 或 FLAC。</translation>
    </message>
</context>
<context>
    <name>VoiceInput</name>
    <message>
        <source>Hold to talk</source>
        <translation>按住说话</translation>
    </message>
    <message>
        <source>Hold to speak; the words land in the message box ({0} starts and stops). You can also drop an audio file on the chat.</source>
        <translation>按住说话；文字会出现在消息框中（{0} 开始和停止）。也可以把音频文件拖放到聊天中。</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Recording… release the button (or press %1 again) to stop</source>
        <translation>正在录音… 松开按钮（或再按 %1）停止</translation>
    </message>
    <message>
        <source>Decoding {0}…</source>
        <translation>正在解码 {0}…</translation>
    </message>
    <message>
        <source>Transcribe speech</source>
        <translation>转写语音</translation>
    </message>
</context>
<context>
    <name>_Filters</name>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>All</source>
        <translation>全部</translation>
    </message>
</context>
<context>
    <name>startup</name>
    <message>
        <source>engine: %1</source>
        <translation>引擎：%1</translation>
    </message>
    <message>
        <source>no engine installed yet</source>
        <translation>尚未安装引擎</translation>
    </message>
</context>
</TS>
